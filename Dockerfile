# hostpath-provisioner's image: the static binary alone, on nothing.
#   docker build -t hostpath-provisioner:latest \
#     --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg COMMIT="$(git rev-parse --short HEAD)" .
# Without a Docker daemon, `make image` builds an equivalent image archive with
# scripts/oci-image.sh (load it with docker load, podman load or ctr images import).

FROM debian:bookworm AS build
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
RUN make hostpath-provisioner VERSION="$VERSION" COMMIT="$COMMIT" \
 && ./hostpath-provisioner --version

# In-cluster it needs no more than the binary: the API server is reached by IP
# (KUBERNETES_SERVICE_HOST) with the service account's mounted CA and token, and the kubelet
# mounts /etc/hosts and /etc/resolv.conf. No shell, no libc, no CA bundle.
FROM scratch
COPY --from=build /src/hostpath-provisioner /hostpath-provisioner
# Root, but the Deployment drops every capability except CHOWN, FOWNER, DAC_OVERRIDE and
# DAC_READ_SEARCH (it must chown folders and remove files of any user).
USER 0
ENTRYPOINT ["/hostpath-provisioner"]
