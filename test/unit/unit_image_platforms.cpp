// Tests the multi-platform archive of scripts/oci-image.sh (several binaries, one per platform):
// the layout `ctr images import --all-platforms` and `skopeo` read (index.json naming one image
// index that lists a manifest per platform, as `docker buildx` writes it), each platform's
// config and layer, and the refusals. Run from the repository root.
//
// The amd64 binary is a static stand-in compiled here; the ARM ones are bare ELF headers (the
// script reads only the header; the layer must hold the bytes as given).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test/support/image_archive.hpp"

namespace {

const char kScript[] = "scripts/oci-image.sh";

struct Platform {
  std::string binary, architecture, variant;  // variant "" for none
};

// An ELF header for the given class (1: 32-bit, 2: 64-bit) and machine, padded to 64 bytes.
std::string ElfHeader(int elf_class, int machine, char filler) {
  std::string h("\x7f" "ELF", 4);
  h += static_cast<char>(elf_class);
  h += "\x01\x01";
  h.resize(18, '\0');
  h += static_cast<char>(machine & 0xff);
  h += static_cast<char>(machine >> 8);
  h.resize(64, filler);  // makes the ARM stand-ins' bytes differ
  return h;
}

struct Built {
  TempDir dir;
  std::vector<Platform> platforms;
  int exit_code = -1;
  std::string output, archive_path;
  std::map<std::string, TarEntry> archive;
};

// Builds the three-platform archive once for all test cases.
const Built& Shared() {
  static Built b;
  if (!b.platforms.empty()) return b;
  const std::string d = b.dir.path();
  REQUIRE(WriteFile(d + "/stand_in.c", "int main(void) { return 0; }\n"));
  REQUIRE(Run("cc -static -Os -s -o " + Quote(d + "/amd64") + " " + Quote(d + "/stand_in.c")) == 0);
  REQUIRE(WriteFile(d + "/arm64", ElfHeader(2, 183, 'a')));
  REQUIRE(WriteFile(d + "/armv7", ElfHeader(1, 40, 'b')));
  b.platforms = {{d + "/amd64", "amd64", ""}, {d + "/arm64", "arm64", ""}, {d + "/armv7", "arm", "v7"}};
  b.archive_path = d + "/multi.tar";
  b.exit_code = Run("bash " + Quote(kScript) + " " + Quote(d + "/amd64") + " " + Quote(d + "/arm64") + " " +
                    Quote(d + "/armv7") + " " + Quote(b.archive_path) + " hostpath-provisioner:v1 >" +
                    Quote(d + "/log") + " 2>&1");
  b.output = ReadFile(d + "/log");
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  b.archive = TarMap(ReadFile(b.archive_path));
  return b;
}

// The image index that index.json names.
picojson::value PlatformIndex() {
  const Built& b = Shared();
  picojson::value index = ParseJson(b.archive.at("index.json").data);
  REQUIRE(Len(Get(index, "manifests")) == 1);
  return ParseJson(Blob(b.archive, Get(Get(index, "manifests"), 0)));
}

TEST_CASE("index.json names one image index, under the image's name") {
  const Built& b = Shared();
  picojson::value index = ParseJson(b.archive.at("index.json").data);
  CHECK(Str(Get(index, "mediaType")) == "application/vnd.oci.image.index.v1+json");
  REQUIRE(Len(Get(index, "manifests")) == 1);
  const picojson::value& entry = Get(Get(index, "manifests"), 0);
  CHECK(Str(Get(entry, "mediaType")) == "application/vnd.oci.image.index.v1+json");
  CHECK(Str(Get(Get(entry, "annotations"), "io.containerd.image.name")) == "docker.io/library/hostpath-provisioner:v1");
  CHECK(Str(Get(Get(entry, "annotations"), "org.opencontainers.image.ref.name")) == "v1");
  CHECK(Str(Get(ParseJson(b.archive.at("oci-layout").data), "imageLayoutVersion")) == "1.0.0");
  CHECK_THAT(b.output, Catch::Contains("amd64,arm64,arm/v7"));
}

TEST_CASE("the image index lists linux/amd64, linux/arm64 and linux/arm/v7, each with its binary") {
  const Built& b = Shared();
  picojson::value index = PlatformIndex();
  CHECK(Num(Get(index, "schemaVersion")) == 2);
  CHECK(Str(Get(index, "mediaType")) == "application/vnd.oci.image.index.v1+json");
  REQUIRE(Len(Get(index, "manifests")) == b.platforms.size());
  for (size_t i = 0; i < b.platforms.size(); ++i) {
    const Platform& p = b.platforms[i];
    INFO("platform " << p.architecture << " " << p.variant);
    const picojson::value& entry = Get(Get(index, "manifests"), i);
    CHECK(Str(Get(entry, "mediaType")) == "application/vnd.oci.image.manifest.v1+json");
    const picojson::value& platform = Get(entry, "platform");
    CHECK(Str(Get(platform, "os")) == "linux");
    CHECK(Str(Get(platform, "architecture")) == p.architecture);
    CHECK((platform.contains("variant") ? Str(Get(platform, "variant")) : "") == p.variant);

    picojson::value manifest = ParseJson(Blob(b.archive, entry));
    picojson::value config = ParseJson(Blob(b.archive, Get(manifest, "config")));
    CHECK(Str(Get(config, "architecture")) == p.architecture);
    CHECK((config.contains("variant") ? Str(Get(config, "variant")) : "") == p.variant);
    CHECK(Str(Get(config, "os")) == "linux");
    CHECK(Str(Get(Get(Get(config, "config"), "Entrypoint"), 0)) == "/hostpath-provisioner");
    REQUIRE(Len(Get(manifest, "layers")) == 1);
    std::string layer_tar = Gunzip(b.dir.path(), Blob(b.archive, Get(Get(manifest, "layers"), 0)));
    CHECK("sha256:" + Sha256Hex(layer_tar) == Str(Get(Get(Get(config, "rootfs"), "diff_ids"), 0)));
    std::map<std::string, TarEntry> layer = TarMap(layer_tar);
    REQUIRE(layer.count("hostpath-provisioner") == 1);
    CHECK(layer.at("hostpath-provisioner").data == ReadFile(p.binary));
    CHECK(layer.at("hostpath-provisioner").mode == 0755);
  }
}

TEST_CASE("the archive holds only the OCI layout: no docker manifest.json, which names one platform per tag") {
  const Built& b = Shared();
  size_t blobs = 0;
  for (const auto& [name, entry] : b.archive) {
    INFO(name);
    CHECK(entry.uid == 0);
    CHECK(entry.mtime == 0);
    if (name.rfind("blobs/sha256/", 0) == 0 && name.size() > 13) ++blobs;
  }
  CHECK(b.archive.count("manifest.json") == 0);
  CHECK(blobs == 3 * 3 + 1);  // a layer, a config and a manifest per platform, and the index
  CHECK(b.archive.size() == blobs + 4);  // blobs/, blobs/sha256/, index.json, oci-layout
}

TEST_CASE("skopeo reads the index raw and picks each platform's config") {
  const Built& b = Shared();
  if (Run("command -v skopeo >/dev/null") != 0) {
    WARN("skopeo is not installed: not checked (apt-get install skopeo)");
    return;
  }
  const std::string out = b.dir.path() + "/skopeo.json";
  const std::string source = "oci-archive:" + Quote(b.archive_path);
  REQUIRE(Run("skopeo inspect --raw " + source + " > " + Quote(out)) == 0);
  CHECK(ReadFile(out) == Blob(b.archive, Get(Get(ParseJson(b.archive.at("index.json").data), "manifests"), 0)));
  for (const Platform& p : b.platforms) {
    INFO("platform " << p.architecture << " " << p.variant);
    std::string flags = "--override-os linux --override-arch " + p.architecture;
    if (!p.variant.empty()) flags += " --override-variant " + p.variant;
    REQUIRE(Run("skopeo " + flags + " inspect --config " + source + " > " + Quote(out)) == 0);
    picojson::value config = ParseJson(ReadFile(out));
    CHECK(Str(Get(config, "architecture")) == p.architecture);
  }
}

TEST_CASE("two binaries of one platform, or one of another machine, are refused with exit 2 and no archive") {
  const Built& b = Shared();
  const std::string d = b.dir.path();
  REQUIRE(WriteFile(d + "/arm64-other", ElfHeader(2, 183, 'c')));
  REQUIRE(WriteFile(d + "/arm-64bit-class", ElfHeader(2, 40, 'd')));
  struct Case {
    const char* what;
    std::string binaries, message;
  };
  const Case cases[] = {
      {"two arm64 binaries", Quote(d + "/arm64") + " " + Quote(d + "/arm64-other"), "two binaries for linux/arm64"},
      {"32-bit ARM machine in a 64-bit ELF", Quote(d + "/amd64") + " " + Quote(d + "/arm-64bit-class"),
       "not x86-64, aarch64 or 32-bit ARM"},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      const std::string out = d + "/refused.tar";
      int rc = Run("bash " + Quote(kScript) + " " + c.binaries + " " + Quote(out) + " hp:1 >" + Quote(d + "/log2") +
                   " 2>&1");
      std::string log = ReadFile(d + "/log2");
      INFO(log);
      CHECK(rc == 2);
      CHECK_THAT(log, Catch::Contains(c.message));
      CHECK(access(out.c_str(), F_OK) != 0);
    }
  }
}

}  // namespace
