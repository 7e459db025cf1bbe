# hostpath-provisioner's image: the static binary alone, on nothing.
#   docker build -t hostpath-provisioner:latest \
#     --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg COMMIT="$(git rev-parse --short HEAD)" .
# For another platform, or several at once (BuildKit: Docker 23+, or buildx; podman too):
#   docker buildx build --platform linux/amd64,linux/arm64,linux/arm/v7 -t REGISTRY/hostpath-provisioner:TAG --push .
# The build stage runs on the builder's own platform and cross-compiles for the target
# (make ARCH=arm64 / ARCH=armv7, from an amd64 builder), so no emulation is needed.
# Without a Docker daemon, `make image` builds an equivalent image archive with
# scripts/oci-image.sh (load it with docker load, podman load or ctr images import), and
# `make image-multiarch` one for all three platforms.

FROM --platform=$BUILDPLATFORM debian:bookworm AS build
# make runs scripts/deps.sh, which installs the compiler and libraries from Debian and fetches
# httplib.h from Debian's source package; make itself is all it needs to start.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# .git is not sent (.dockerignore), so the version comes in as build arguments.
ARG VERSION=unknown
ARG COMMIT=unknown
# Set by BuildKit from --platform (default: the builder's own).
ARG BUILDARCH
ARG TARGETARCH
ARG TARGETVARIANT
RUN set -e; \
    if [ "${TARGETARCH:-$BUILDARCH}" = "$BUILDARCH" ]; then \
      make hostpath-provisioner VERSION="$VERSION" COMMIT="$COMMIT" && ./hostpath-provisioner --version; \
    else \
      case "$TARGETARCH$TARGETVARIANT" in \
        arm64) arch=arm64 ;; \
        armv7) arch=armv7 ;; \
        *) echo "no cross build from $BUILDARCH for $TARGETARCH$TARGETVARIANT (amd64 builds arm64 and arm/v7)" >&2; exit 1 ;; \
      esac; \
      make ARCH=$arch VERSION="$VERSION" COMMIT="$COMMIT" && cp build/$arch/hostpath-provisioner ./hostpath-provisioner; \
    fi

# In-cluster it needs no more than the binary: the API server is reached by IP
# (KUBERNETES_SERVICE_HOST) with the service account's mounted CA and token, and the kubelet
# mounts /etc/hosts and /etc/resolv.conf. No shell, no libc, no CA bundle.
FROM scratch
COPY --from=build /src/hostpath-provisioner /hostpath-provisioner
# Root, but the Deployment drops every capability except CHOWN, FOWNER, DAC_OVERRIDE and
# DAC_READ_SEARCH (it must chown folders and remove files of any user).
USER 0
ENTRYPOINT ["/hostpath-provisioner"]
