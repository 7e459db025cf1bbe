// Errors as values: Status says ok or why not; Result<T> carries a T or a Status.
// No exceptions cross file boundaries.
#pragma once
#include <string>
#include <utility>

class Status {
 public:
  // Well-known kinds of failure that callers sort on. Everything else is kError. kCanceled: cut
  // short because the caller asked it to stop.
  enum Code { kOk = 0, kError, kNotFound, kConflict, kGone, kInvalid, kUnauthorized, kForbidden, kUnavailable, kTooLarge, kCanceled };

  Status() = default;  // ok
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(kError, std::move(message)); }
  static Status Invalid(std::string message) { return Status(kInvalid, std::move(message)); }
  static Status NotFound(std::string message) { return Status(kNotFound, std::move(message)); }
  Status(Code code, std::string message, int sys_errno = 0)
      : code_(code), message_(std::move(message)), errno_(sys_errno) {}

  bool ok() const { return code_ == kOk; }
  Code code() const { return code_; }
  int sys_errno() const { return errno_; }  // the errno behind a failed system call; 0 if none
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "context: message" (one line of context per layer); an
  // ok Status is returned unchanged. The code and errno stay.
  Status Wrap(const std::string& context) const;

 private:
  Code code_ = kOk;
  std::string message_;
  int errno_ = 0;
};

template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit on purpose
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: must not be ok
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return value_; }
  const T& value() const { return value_; }
  T& operator*() { return value_; }
  const T& operator*() const { return value_; }
  T* operator->() { return &value_; }
  const T* operator->() const { return &value_; }

 private:
  T value_{};
  Status status_;
};
