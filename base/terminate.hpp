// What an uncaught exception prints before the abort: the type (as the compiler names it) and
// its what(). It replaces libstdc++'s handler of the same name, which prints the type demangled
// and so links in the demangler (about 45 KB of a 6 MiB binary). Include it in main.cpp only.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include <cxxabi.h>

namespace __gnu_cxx {
void __verbose_terminate_handler() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) {
    std::fputs("terminate called without an active exception\n", stderr);
    std::abort();
  }
  std::fprintf(stderr, "terminate called after throwing an instance of '%s'\n", type->name());
  try {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "  what():  %s\n", e.what());
  } catch (...) {
  }
  std::abort();
}
}  // namespace __gnu_cxx
