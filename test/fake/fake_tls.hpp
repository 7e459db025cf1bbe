// Test PKI for the fake API server: a throw-away CA and a server certificate for 127.0.0.1 and
// localhost signed by it, made with OpenSSL's C API (no CLI needed). P-256 keys: quick to make.
#pragma once
#include <openssl/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.hpp"

namespace fake {

struct X509Deleter {
  void operator()(X509* x) const;  // X509_free
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const;  // EVP_PKEY_free
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

// The CA and the server's certificate and key. The CA's key is dropped once it has signed.
struct TestPki {
  X509Ptr ca_cert;
  X509Ptr server_cert;
  PkeyPtr server_key;
  std::string ca_pem;  // PEM of ca_cert, for ca.crt files
};

namespace tls_detail {

// A certificate for key `key` named `cn`, valid for a day, signed by issuer/issuer_key
// (itself when issuer is null), carrying the extensions given as (nid, value) pairs.
Result<X509Ptr> MakeCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                         const std::vector<std::pair<int, const char*>>& exts);

std::string ToPem(X509* cert);

}  // namespace tls_detail

// Makes a fresh CA and a server certificate (SAN IP:127.0.0.1, DNS:localhost, serverAuth).
// Errors only when OpenSSL fails.
Result<TestPki> MakeTestPki();

}  // namespace fake
