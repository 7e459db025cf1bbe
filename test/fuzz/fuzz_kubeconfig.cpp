// libFuzzer target: kubeconfig text. kubeconfig.hpp parses text only inside LoadKubeconfig
// (it reads the file, then parses YAML and walks contexts, clusters and users), so each input
// is written to a kubeconfig file in a private folder that also holds a real CA certificate
// (ca.crt), a matching client certificate and key (client.crt, client.key) and a token file
// (token), for relative references to reach the certificate checks. Properties: failures are
// kInvalid/kError/kNotFound messages starting with "kubeconfig PATH: "; allowing insecure
// never turns a success into a failure or changes the result; a success has an https server,
// a valid namespace and some credential.
// Run it with stdin at /dev/null (`make fuzz` does): a kubeconfig may name any file, /dev/stdin too.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "kube/kubeconfig.hpp"

namespace {

void Require(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz_kubeconfig: property failed: %s\n%s\n", what, detail.c_str());
  std::abort();
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, size_t(n));
  BIO_free(bio);
  return out;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  Require(out.good(), "cannot write", path);
}

// Writes a self-signed P-256 certificate and its key as PEM files.
void WriteCert(const std::string& cert_path, const std::string& key_path, const char* cn) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_sign(x, key, EVP_sha256());
  BIO* cb = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cb, x);
  BIO* kb = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(kb, key, nullptr, nullptr, 0, nullptr, nullptr);
  X509_free(x);
  EVP_PKEY_free(key);
  WriteFile(cert_path, BioText(cb));
  WriteFile(key_path, BioText(kb));
}

// The private folder, made once and removed at exit.
struct Folder {
  std::string dir;
  std::string config;
  Folder() {
    char tmpl[] = "/tmp/fuzz-kubeconfig-XXXXXX";
    Require(::mkdtemp(tmpl) != nullptr, "mkdtemp failed");
    dir = tmpl;
    config = dir + "/config";
    WriteCert(dir + "/ca.crt", dir + "/ca.key", "fuzz-ca");
    WriteCert(dir + "/client.crt", dir + "/client.key", "fuzz-admin");
    WriteFile(dir + "/token", "fuzz-token\n");
  }
  ~Folder() {
    for (const char* f : {"/config", "/ca.crt", "/ca.key", "/client.crt", "/client.key", "/token"})
      ::unlink((dir + f).c_str());
    ::rmdir(dir.c_str());
  }
};

const Folder& TheFolder() {
  static Folder folder;
  return folder;
}

bool SameCredentials(const ApiCredentials& a, const ApiCredentials& b) {
  return a.server == b.server && a.ca_pem == b.ca_pem && a.token == b.token && a.token_file == b.token_file &&
         a.client_cert_pem == b.client_cert_pem && a.client_key_pem == b.client_key_pem &&
         a.insecure_skip_tls_verify == b.insecure_skip_tls_verify && a.namespace_ == b.namespace_ &&
         a.source == b.source;
}

void CheckFailure(const Status& s, const std::string& path) {
  Require(s.code() == Status::kInvalid || s.code() == Status::kError || s.code() == Status::kNotFound,
          "unexpected error code", s.message());
  const std::string prefix = "kubeconfig " + path + ": ";
  Require(s.message().compare(0, prefix.size(), prefix) == 0,
          "error message does not name the kubeconfig", s.message());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Folder& folder = TheFolder();
  WriteFile(folder.config, std::string(reinterpret_cast<const char*>(data), size));

  Result<ApiCredentials> strict = LoadKubeconfig(folder.config, false);
  Result<ApiCredentials> lenient = LoadKubeconfig(folder.config, true);
  if (!strict.ok()) CheckFailure(strict.status(), folder.config);
  if (!lenient.ok()) {
    CheckFailure(lenient.status(), folder.config);
    Require(!strict.ok(), "allowing insecure turned a success into a failure", lenient.status().message());
    return 0;
  }
  if (strict.ok()) {
    Require(SameCredentials(*strict, *lenient), "allowing insecure changed an accepted kubeconfig");
    Require(!strict->insecure_skip_tls_verify, "insecure-skip-tls-verify accepted without allow_insecure");
  }
  const ApiCredentials& c = *lenient;
  Require(c.server.compare(0, 8, "https://") == 0 && c.server.back() != '/', "server is not https://host[:port]",
          c.server);
  Require(kubeconfig_detail::IsDns1123Label(c.namespace_), "namespace is not a DNS-1123 label", c.namespace_);
  Require(!c.token.empty() || !c.token_file.empty() || !c.client_cert_pem.empty(), "no credentials accepted");
  Require(c.client_cert_pem.empty() == c.client_key_pem.empty(), "a client certificate without its key or back");
  Require(!(c.insecure_skip_tls_verify && !c.ca_pem.empty()), "both a CA and insecure-skip-tls-verify");
  return 0;
}
