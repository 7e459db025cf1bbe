#!/usr/bin/env bash
# Splits cpp-httplib's header-only httplib.h into a header and a .cc, as its own split.py does
# (Debian's source package has it; this is the same rule in awk, so the build needs no Python):
# the parts between the "// ----...----" border lines are the bodies of the non-template
# functions; they go to httplib.cc without their `inline`, the rest stays in httplib.h. The
# header-only form compiled those ~6,600 lines again in every file that includes it; the .cc
# is compiled once per kind of build (Makefile).
# Two of the bodies are called from outside httplib, so the header also declares them here
# (hand-written, the only additions): detail::status_message (test/fake/fake_https.cpp), and
# detail::process_server_socket (serve/http_endpoint.cpp's GatedServer serves a connection the
# way Server::process_and_close_socket does), a template whose body only httplib.cc sees: it is
# declared and compiled for a std::function callback, which the call's lambda converts to.
#   scripts/httplib-split.sh HEADER_ONLY_HTTPLIB_H OUT_DIR    writes OUT_DIR/httplib.{h,cc}
set -euo pipefail
in=$1 out=$2
mkdir -p "$out"
awk -v h="$out/httplib.h.tmp" -v cc="$out/httplib.cc.tmp" '
  BEGIN { print "#include \"httplib.h\"\nnamespace httplib {" > cc }
  index($0, "// ----------------------------------------------------------------------------") {
    body = !body; next
  }
  body { gsub(/inline /, ""); print > cc; next }
  { print > h }
  END { print "} // namespace httplib" > cc }' "$in"
cat >> "$out/httplib.h.tmp" <<'END'

// Added by scripts/httplib-split.sh: bodies in httplib.cc that code outside httplib calls.
#ifndef HP_HTTPLIB_SPLIT_EXTRA_H
#define HP_HTTPLIB_SPLIT_EXTRA_H
namespace httplib {
namespace detail {
const char *status_message(int status);
using ServerSocketCallback = std::function<bool(Stream &strm, bool close_connection, bool &connection_closed)>;
bool process_server_socket(const std::atomic<socket_t> &svr_sock, socket_t sock, size_t keep_alive_max_count,
                           time_t keep_alive_timeout_sec, time_t read_timeout_sec, time_t read_timeout_usec,
                           time_t write_timeout_sec, time_t write_timeout_usec, ServerSocketCallback callback);
}  // namespace detail
}  // namespace httplib
#endif
END
cat >> "$out/httplib.cc.tmp" <<'END'

// Added by scripts/httplib-split.sh: the template above, for the callback type httplib.h declares.
namespace httplib {
namespace detail {
bool process_server_socket(const std::atomic<socket_t> &svr_sock, socket_t sock, size_t keep_alive_max_count,
                           time_t keep_alive_timeout_sec, time_t read_timeout_sec, time_t read_timeout_usec,
                           time_t write_timeout_sec, time_t write_timeout_usec, ServerSocketCallback callback) {
  return process_server_socket<ServerSocketCallback>(svr_sock, sock, keep_alive_max_count, keep_alive_timeout_sec,
                                                     read_timeout_sec, read_timeout_usec, write_timeout_sec,
                                                     write_timeout_usec, std::move(callback));
}
}  // namespace detail
}  // namespace httplib
END
mv "$out/httplib.cc.tmp" "$out/httplib.cc"
mv "$out/httplib.h.tmp" "$out/httplib.h"
