// Where the API server is and how to authenticate to it: from a kubeconfig file (out of
// cluster) or from the pod's service account (in cluster). Reads files; no network.
// Thread-safe: the functions keep no state.
#pragma once
#include <functional>
#include <string>

#include "base/status.hpp"

struct ApiCredentials {
  std::string server;           // "https://host:port" (no trailing slash)
  std::string ca_pem;           // PEM of the CA bundle that must sign the server's cert; "" = none given
  std::string token;            // static bearer token ("" if none)
  std::string token_file;       // file holding the bearer token; re-read by the client when it changes / after 401
  std::string client_cert_pem;  // client certificate (PEM), or ""
  std::string client_key_pem;   // its private key (PEM), or ""
  bool insecure_skip_tls_verify = false;
  std::string namespace_;  // the context's namespace, or the service account's; "default" if none
  std::string source;      // for messages: "kubeconfig /path (context x)" or "in-cluster service account /dir"
};

// Reads a kubeconfig file (YAML or JSON, as yaml.hpp reads them: UTF-8 or UTF-16 with a
// byte-order mark, anchors, aliases and merge keys): current-context → context → cluster + user.
// Cluster: server (https:// only; no path), certificate-authority (a file; relative paths are
// resolved against the kubeconfig's folder) or certificate-authority-data (base64), and
// insecure-skip-tls-verify (refused unless allow_insecure, and never with a CA). User: token
// and/or tokenFile (must be readable now), client-certificate/client-key (file or -data; the
// key must be unencrypted and match). No CA leaves ca_pem "". Refused with a clear error:
// exec, auth-provider, username/password, impersonation, proxy-url, tls-server-name, a user
// without credentials, a file and -data for the same thing. Errors start with
// "kubeconfig PATH: " and name the entry and field,
// e.g. `kubeconfig /x: context "ctx" names user "u", which is not in users`.
Result<ApiCredentials> LoadKubeconfig(const std::string& path, bool allow_insecure);

// In-cluster configuration, as client-go's rest.InClusterConfig: server
// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6 hosts in brackets),
// token_file = dir/token (must be readable and non-empty now; the client re-reads it),
// ca_pem from dir/ca.crt; namespace_ from $POD_NAMESPACE, else dir/namespace, else "default".
// Errors name the missing variable or file and suggest --kubeconfig outside a cluster.
Result<ApiCredentials> LoadInCluster(const std::string& serviceaccount_dir,
                                     const std::function<const char*(const char*)>& getenv);

// Pieces of the above that the tests check on their own.
namespace kubeconfig_detail {

// RFC 4648 base64 with padding, as Go's base64.StdEncoding (which skips \r and \n).
// Errors (kInvalid): "not valid base64".
Result<std::string> DecodeBase64(const std::string& in);

// DNS-1123 label, as Kubernetes requires of namespaces.
bool IsDns1123Label(const std::string& s);

}  // namespace kubeconfig_detail
