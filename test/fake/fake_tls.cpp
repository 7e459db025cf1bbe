// The bodies of fake_tls.hpp (the contracts are there).
#include "test/fake/fake_tls.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

namespace fake {

void X509Deleter::operator()(X509* x) const { X509_free(x); }
void PkeyDeleter::operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }

namespace {

Status AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return Status::Error(std::string("bad certificate extension ") + value);
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok == 1 ? Status::Ok() : Status::Error("X509_add_ext failed");
}

}  // namespace

namespace tls_detail {

Result<X509Ptr> MakeCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                         const std::vector<std::pair<int, const char*>>& exts) {
  X509Ptr cert(X509_new());
  if (!cert) return Status::Error("X509_new failed");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 2 * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  for (const auto& [nid, value] : exts) {
    Status s = AddExt(cert.get(), signer, nid, value);
    if (!s.ok()) return s;
  }
  if (X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()) == 0) return Status::Error("X509_sign failed");
  return cert;
}

std::string ToPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

}  // namespace tls_detail

Result<TestPki> MakeTestPki() {
  using namespace tls_detail;
  PkeyPtr ca_key(EVP_EC_gen("P-256"));
  PkeyPtr server_key(EVP_EC_gen("P-256"));
  if (!ca_key || !server_key) return Status::Error("EVP_EC_gen failed");
  auto ca = MakeCert(ca_key.get(), "fake-apiserver-ca", nullptr, nullptr,
                     {{NID_basic_constraints, "critical,CA:TRUE"},
                      {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                      {NID_subject_key_identifier, "hash"}});
  if (!ca.ok()) return ca.status();
  auto server = MakeCert(server_key.get(), "fake-apiserver", ca->get(), ca_key.get(),
                         {{NID_basic_constraints, "critical,CA:FALSE"},
                          {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                          {NID_ext_key_usage, "serverAuth"},
                          {NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
                          {NID_authority_key_identifier, "keyid:always"}});
  if (!server.ok()) return server.status();
  TestPki pki;
  pki.ca_pem = ToPem(ca->get());
  pki.ca_cert = std::move(*ca);
  pki.server_cert = std::move(*server);
  pki.server_key = std::move(server_key);
  return pki;
}

}  // namespace fake
