// Tests scripts/oci-image.sh, the daemon-less image builder: it runs the script, opens the
// archive it wrote with a small tar reader of our own, and checks every digest, size and name
// an OCI runtime, `ctr images import` and `docker load` rely on. Run from the repository root.
//
// The image is built from ./hostpath-provisioner when it exists (`make`), otherwise from a
// static stand-in compiled here from C; the naming and rejection tables always use the stand-in.
#include <openssl/evp.h>
#include <picojson.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "test/support/image_archive.hpp"

namespace {

namespace fs = std::filesystem;
const char kScript[] = "scripts/oci-image.sh";
const char kRealBinary[] = "hostpath-provisioner";

// --- running the script ---------------------------------------------------------------------

struct ScriptRun {
  int exit_code = -1;
  std::string output;   // stdout and stderr
  std::string archive;  // the archive's bytes, "" if none was written
};

// Runs the script with the given arguments (already quoted) writing to out.
ScriptRun RunScript(const std::string& dir, const std::string& binary, const std::string& out,
                    const std::string& reference) {
  ScriptRun r;
  std::string log = dir + "/script.log";
  r.exit_code = Run("bash " + Quote(kScript) + " " + Quote(binary) + " " + Quote(out) + " " + Quote(reference) +
                    " >" + Quote(log) + " 2>&1");
  r.output = ReadFile(log);
  r.archive = ReadFile(out);
  return r;
}

// Everything built once and shared by the test cases below.
struct Built {
  TempDir dir;
  std::string stand_in;     // static C program: "--help" exits 0
  std::string binary;       // what the main image was built from
  std::string binary_data;  // its bytes
  ScriptRun first, second;  // two builds of the main image, the second from a touched copy
};

// Fills b: compiles the stand-in, then builds the main image twice.
void Build(Built& b) {
  REQUIRE(!b.dir.path().empty());
  REQUIRE(access(kScript, R_OK) == 0);  // run from the repository root
  std::string c = b.dir.path() + "/stand_in.c";
  b.stand_in = b.dir.path() + "/stand-in";
  REQUIRE(WriteFile(c,
                    "#include <string.h>\n"
                    "int main(int argc, char** argv) {\n"
                    "  return (argc == 2 && strcmp(argv[1], \"--help\") == 0) ? 0 : 3;\n"
                    "}\n"));
  REQUIRE(Run("cc -static -Os -s -o " + Quote(b.stand_in) + " " + Quote(c)) == 0);
  b.binary = access(kRealBinary, X_OK) == 0 ? kRealBinary : b.stand_in;
  b.binary_data = ReadFile(b.binary);
  b.first = RunScript(b.dir.path(), b.binary, b.dir.path() + "/first.tar", "hostpath-provisioner:latest");
  // The same bytes under another name, mode and time must give the same archive.
  std::string copy = b.dir.path() + "/copy";
  REQUIRE(WriteFile(copy, b.binary_data));
  REQUIRE(chmod(copy.c_str(), 0700) == 0);
  REQUIRE(Run("touch -d 2001-02-03T04:05:06Z " + Quote(copy)) == 0);
  b.second = RunScript(b.dir.path(), copy, b.dir.path() + "/second.tar", "hostpath-provisioner:latest");
  WARN("image built from " << b.binary << " (" << b.binary_data.size() << " bytes): archive "
                           << b.first.archive.size() << " bytes");
}

// The shared build, made on first use; its folder is removed when the program ends.
const Built& Shared() {
  static Built built;
  static bool ready = false;
  if (!ready) {
    Build(built);
    ready = true;
  }
  return built;
}

// The archive of the main image, parsed; fails the test if the script failed.
const std::map<std::string, TarEntry>& MainArchive() {
  static std::map<std::string, TarEntry> archive;
  if (archive.empty()) {
    const Built& b = Shared();
    INFO(b.first.output);
    REQUIRE(b.first.exit_code == 0);
    archive = TarMap(b.first.archive);
  }
  return archive;
}

// The OCI manifest, reached from index.json.
picojson::value MainManifest() {
  const auto& archive = MainArchive();
  picojson::value index = ParseJson(archive.at("index.json").data);
  return ParseJson(Blob(archive, Get(Get(index, "manifests"), 0)));
}

// --- the tests ------------------------------------------------------------------------------

TEST_CASE("image archive holds exactly the OCI layout and docker's manifest.json, owned by root at time 0") {
  const auto& archive = MainArchive();
  picojson::value manifest = MainManifest();
  std::string config_digest = Str(Get(Get(manifest, "config"), "digest")).substr(7);
  std::string layer_digest = Str(Get(Get(Get(manifest, "layers"), 0), "digest")).substr(7);
  std::string manifest_digest = Sha256Hex(Blob(archive, Get(Get(ParseJson(archive.at("index.json").data), "manifests"), 0)));
  std::map<std::string, unsigned> expected = {
      {"blobs/", 0755}, {"blobs/sha256/", 0755}, {"blobs/sha256/" + config_digest, 0644},
      {"blobs/sha256/" + layer_digest, 0644}, {"blobs/sha256/" + manifest_digest, 0644},
      {"index.json", 0644}, {"manifest.json", 0644}, {"oci-layout", 0644}};
  REQUIRE(archive.size() == expected.size());
  for (const auto& [name, mode] : expected) {
    INFO("entry " << name);
    REQUIRE(archive.count(name) == 1);
    const TarEntry& e = archive.at(name);
    CHECK(e.type == (name.back() == '/' ? '5' : '0'));
    CHECK(e.mode == mode);
    CHECK(e.uid == 0);
    CHECK(e.gid == 0);
    CHECK(e.mtime == 0);
  }
}

TEST_CASE("oci-layout and index.json name the manifest blob and the image") {
  const auto& archive = MainArchive();
  picojson::value layout = ParseJson(archive.at("oci-layout").data);
  CHECK(Str(Get(layout, "imageLayoutVersion")) == "1.0.0");
  picojson::value index = ParseJson(archive.at("index.json").data);
  CHECK(Num(Get(index, "schemaVersion")) == 2);
  CHECK(Str(Get(index, "mediaType")) == "application/vnd.oci.image.index.v1+json");
  REQUIRE(Len(Get(index, "manifests")) == 1);
  const picojson::value& entry = Get(Get(index, "manifests"), 0);
  CHECK(Str(Get(entry, "mediaType")) == "application/vnd.oci.image.manifest.v1+json");
  Blob(archive, entry);  // digest and size match
  const picojson::value& annotations = Get(entry, "annotations");
  CHECK(Str(Get(annotations, "org.opencontainers.image.ref.name")) == "latest");
  CHECK(Str(Get(annotations, "io.containerd.image.name")) == "docker.io/library/hostpath-provisioner:latest");
}

TEST_CASE("manifest's config and layer descriptors match their blobs") {
  const auto& archive = MainArchive();
  picojson::value manifest = MainManifest();
  CHECK(Num(Get(manifest, "schemaVersion")) == 2);
  CHECK(Str(Get(manifest, "mediaType")) == "application/vnd.oci.image.manifest.v1+json");
  const picojson::value& config = Get(manifest, "config");
  CHECK(Str(Get(config, "mediaType")) == "application/vnd.oci.image.config.v1+json");
  Blob(archive, config);
  REQUIRE(Len(Get(manifest, "layers")) == 1);
  const picojson::value& layer = Get(Get(manifest, "layers"), 0);
  CHECK(Str(Get(layer, "mediaType")) == "application/vnd.oci.image.layer.v1.tar+gzip");
  const std::string& gz = Blob(archive, layer);
  REQUIRE(gz.size() > 10);
  CHECK(gz.compare(0, 2, "\x1f\x8b") == 0);
  CHECK(gz.compare(4, 4, std::string(4, '\0')) == 0);  // gzip -n: no timestamp
}


TEST_CASE("config: linux/amd64, runs /hostpath-provisioner as root, diff_id is the gunzipped layer's sha256") {
  const auto& archive = MainArchive();
  picojson::value manifest = MainManifest();
  picojson::value config = ParseJson(Blob(archive, Get(manifest, "config")));
  CHECK(Str(Get(config, "architecture")) == "amd64");
  CHECK(Str(Get(config, "os")) == "linux");
  const picojson::value& run = Get(config, "config");
  REQUIRE(Len(Get(run, "Entrypoint")) == 1);
  CHECK(Str(Get(Get(run, "Entrypoint"), 0)) == "/hostpath-provisioner");
  CHECK(Str(Get(run, "User")) == "0");
  CHECK(Str(Get(Get(config, "rootfs"), "type")) == "layers");
  REQUIRE(Len(Get(Get(config, "rootfs"), "diff_ids")) == 1);
  std::string layer_tar = Gunzip(Shared().dir.path(), Blob(archive, Get(Get(manifest, "layers"), 0)));
  CHECK(Str(Get(Get(Get(config, "rootfs"), "diff_ids"), 0)) == "sha256:" + Sha256Hex(layer_tar));
  CHECK(Len(Get(config, "history")) == 1);
}

TEST_CASE("docker manifest.json names the same config and layer, and the tag") {
  const auto& archive = MainArchive();
  picojson::value manifest = MainManifest();
  picojson::value docker = ParseJson(archive.at("manifest.json").data);
  REQUIRE(Len(docker) == 1);
  const picojson::value& image = Get(docker, 0);
  std::string config = Str(Get(image, "Config"));
  CHECK(archive.count(config) == 1);
  CHECK(config == "blobs/sha256/" + Str(Get(Get(manifest, "config"), "digest")).substr(7));
  REQUIRE(Len(Get(image, "Layers")) == 1);
  std::string layer = Str(Get(Get(image, "Layers"), 0));
  CHECK(archive.count(layer) == 1);
  CHECK(layer == "blobs/sha256/" + Str(Get(Get(Get(manifest, "layers"), 0), "digest")).substr(7));
  REQUIRE(Len(Get(image, "RepoTags")) == 1);
  CHECK(Str(Get(Get(image, "RepoTags"), 0)) == "hostpath-provisioner:latest");
}

TEST_CASE("layer holds only /hostpath-provisioner, 0755 root, the input's bytes, and it runs") {
  const auto& archive = MainArchive();
  const Built& b = Shared();
  std::string layer_tar = Gunzip(b.dir.path(), Blob(archive, Get(Get(MainManifest(), "layers"), 0)));
  auto layer = TarMap(layer_tar);
  REQUIRE(layer.size() == 1);
  REQUIRE(layer.count("hostpath-provisioner") == 1);
  const TarEntry& e = layer.at("hostpath-provisioner");
  CHECK(e.type == '0');
  CHECK(e.mode == 0755);
  CHECK(e.uid == 0);
  CHECK(e.gid == 0);
  CHECK(e.mtime == 0);
  REQUIRE(e.data == b.binary_data);
  std::string extracted = b.dir.path() + "/extracted-hostpath-provisioner";
  REQUIRE(WriteFile(extracted, e.data));
  REQUIRE(chmod(extracted.c_str(), e.mode) == 0);
  CHECK(Run(Quote(extracted) + " --help >/dev/null 2>&1") == 0);
}

TEST_CASE("two builds from the same bytes are byte-identical, whatever the input's name, mode and time") {
  const Built& b = Shared();
  INFO(b.second.output);
  REQUIRE(b.second.exit_code == 0);
  REQUIRE(!b.first.archive.empty());
  CHECK(b.first.archive == b.second.archive);
}

TEST_CASE("the script prints the image reference and the archive's size") {
  const Built& b = Shared();
  std::string out = b.dir.path() + "/first.tar";
  CHECK_THAT(b.first.output, Catch::Contains("hostpath-provisioner:latest"));
  CHECK_THAT(b.first.output,
             Catch::Contains("archive " + out + ": " + std::to_string(b.first.archive.size()) + " bytes"));
}

TEST_CASE("references become containerd names, OCI ref names and docker RepoTags") {
  struct Case {
    const char* what;
    const char* reference;
    const char* containerd_name;  // io.containerd.image.name
    const char* ref_name;         // org.opencontainers.image.ref.name
    const char* repo_tag;         // docker manifest.json RepoTags[0]
  };
  const Case cases[] = {
      {"plain name and tag", "hostpath-provisioner:v1.2.3", "docker.io/library/hostpath-provisioner:v1.2.3",
       "v1.2.3", "hostpath-provisioner:v1.2.3"},
      {"no tag means latest", "hostpath-provisioner", "docker.io/library/hostpath-provisioner:latest", "latest",
       "hostpath-provisioner:latest"},
      {"user repository on Docker Hub", "example/hp:dev", "docker.io/example/hp:dev", "dev", "example/hp:dev"},
      {"registry with port, no tag", "registry.local:5000/team/hp", "registry.local:5000/team/hp:latest",
       "latest", "registry.local:5000/team/hp:latest"},
      {"localhost registry", "localhost/hp:1", "localhost/hp:1", "1", "localhost/hp:1"},
      {"separators inside components", "my_org/host-path.prov__x:A_b-9", "docker.io/my_org/host-path.prov__x:A_b-9",
       "A_b-9", "my_org/host-path.prov__x:A_b-9"},
  };
  const Built& b = Shared();
  for (const Case& c : cases) {
    SECTION(c.what) {
      std::string out = b.dir.path() + "/named.tar";
      ScriptRun r = RunScript(b.dir.path(), b.stand_in, out, c.reference);
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      auto archive = TarMap(r.archive);
      REQUIRE(archive.count("index.json") == 1);
      picojson::value index = ParseJson(archive.at("index.json").data);
      const picojson::value& entry = Get(Get(index, "manifests"), 0);
      CHECK(Str(Get(Get(entry, "annotations"), "io.containerd.image.name")) == c.containerd_name);
      CHECK(Str(Get(Get(entry, "annotations"), "org.opencontainers.image.ref.name")) == c.ref_name);
      REQUIRE(archive.count("manifest.json") == 1);
      CHECK(Str(Get(Get(Get(ParseJson(archive.at("manifest.json").data), 0), "RepoTags"), 0)) == c.repo_tag);
    }
  }
}

TEST_CASE("bad arguments are rejected with exit 2 and no archive") {
  const Built& b = Shared();
  std::string text = b.dir.path() + "/not-elf";
  REQUIRE(WriteFile(text, "#!/bin/sh\nexit 0\n"));
  std::string riscv = b.dir.path() + "/riscv-elf";  // ELF header with e_machine 243 (RISC-V)
  std::string header("\x7f" "ELF\x02\x01\x01", 7);
  header.resize(64, '\0');
  header[18] = static_cast<char>(243);
  REQUIRE(WriteFile(riscv, header));
  const std::string out = b.dir.path() + "/rejected.tar";
  struct Case {
    const char* what;
    std::string binary, out, reference;
  };
  const Case cases[] = {
      {"missing binary", b.dir.path() + "/no-such-binary", out, "hp:1"},
      {"binary is a folder", b.dir.path(), out, "hp:1"},
      {"not an ELF file", text, out, "hp:1"},
      {"ELF for another machine", riscv, out, "hp:1"},
      {"output folder missing", b.stand_in, b.dir.path() + "/no-such-dir/x.tar", "hp:1"},
      {"output is a folder", b.stand_in, b.dir.path(), "hp:1"},
      {"name longer than 255", b.stand_in, out, std::string(200, 'a') + "/" + std::string(60, 'b') + ":1"},
      {"upper-case name", b.stand_in, out, "HostPath:1"},
      {"empty name", b.stand_in, out, ":1"},
      {"empty tag", b.stand_in, out, "hp:"},
      {"space in tag", b.stand_in, out, "hp:a b"},
      {"tag starting with a dot", b.stand_in, out, "hp:.x"},
      {"tag longer than 128", b.stand_in, out, "hp:" + std::string(129, 'a')},
      {"quote in name", b.stand_in, out, "h\"p:1"},
      {"leading slash", b.stand_in, out, "/hp:1"},
      {"empty path component", b.stand_in, out, "a//hp:1"},
      {"trailing separator", b.stand_in, out, "hp-:1"},
      {"digest instead of tag", b.stand_in, out, "hp@sha256:abc"},
      {"registry without a path", b.stand_in, out, "registry.local:5000/"},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      bool existed = access(c.out.c_str(), F_OK) == 0;  // only "output is a folder"
      ScriptRun r = RunScript(b.dir.path(), c.binary, c.out, c.reference);
      INFO(r.output);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.output, Catch::Contains("oci-image: "));
      CHECK((access(c.out.c_str(), F_OK) == 0) == existed);
    }
  }
  SECTION("wrong number of arguments") {
    CHECK(Run("bash " + Quote(kScript) + " " + Quote(b.stand_in) + " >/dev/null 2>&1") == 2);
  }
}

// Rewrites the checksum of the archive's first header to fit its bytes.
void FixChecksum(std::string& tar) {
  long long sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(tar[i]);
  char field[9];
  std::snprintf(field, sizeof field, "%06llo", sum);
  tar.replace(148, 8, std::string(field, 6) + std::string("\0 ", 2));
}

TEST_CASE("the tar reader rejects archives it cannot vouch for") {
  const std::string& good = Shared().first.archive;
  REQUIRE(good.size() > 1024);
  REQUIRE(ParseTar(good).ok());
  std::string bad_checksum = good;
  bad_checksum[0] ^= 1;
  std::string not_ustar = good;  // GNU tar's old magic, with a checksum that fits it
  not_ustar.replace(257, 8, std::string("ustar  \0", 8));
  FixChecksum(not_ustar);
  struct Case {
    const char* what;
    std::string tar;
  };
  const Case cases[] = {
      {"flipped name byte", bad_checksum},
      {"no ustar magic", not_ustar},
      {"truncated", good.substr(0, 1024)},
      {"empty", ""},
  };
  for (const Case& c : cases) {
    SECTION(c.what) { CHECK(!ParseTar(c.tar).ok()); }
  }
}

}  // namespace
