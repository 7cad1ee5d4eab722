// Status and Result<T>: how vgpu's C++ code returns recoverable failures.
//
// Codes are the canonical gRPC set, so a Status maps 1:1 onto grpc::Status at the RPC edge
// (ToGrpc lives with the gRPC code, not here, to keep this header dependency-free).
// Exceptions never cross a library boundary; "cannot happen" after start-up is fatal instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace vgpu {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: --share-mode: unknown value 'x'" — for logs and user-facing errors.
  std::string ToString() const;

  // Prefixes context to the message, keeping the code: s.Annotate("checkpoint /var/x").
  Status Annotate(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status AlreadyExistsError(std::string m) {
  return Status(StatusCode::kAlreadyExists, std::move(m));
}
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status PermissionDeniedError(std::string m) {
  return Status(StatusCode::kPermissionDenied, std::move(m));
}
inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status DataLossError(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status UnimplementedError(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
// errno-based failure from a system call: "open /dev/vgpuctl0: No such file or directory".
Status ErrnoError(std::string_view what, int err);

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design, like absl::StatusOr
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) {
      status_ = InternalError("Result constructed from an OK status without a value");
    }
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace vgpu

// Early return on failure, for functions returning Status or Result<T>.
#define VGPU_RETURN_IF_ERROR(expr)        \
  do {                                    \
    ::vgpu::Status vgpu_status_ = (expr); \
    if (!vgpu_status_.ok()) {             \
      return vgpu_status_;                \
    }                                     \
  } while (0)
