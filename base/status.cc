#include "vgpu/status.h"

#include <cerrno>
#include <cstring>

#include "vgpu/enum_names.h"

namespace vgpu {
namespace {

constexpr EnumName<StatusCode> kStatusCodeNames[] = {
    {StatusCode::kOk, "OK"},
    {StatusCode::kCancelled, "CANCELLED"},
    {StatusCode::kUnknown, "UNKNOWN"},
    {StatusCode::kInvalidArgument, "INVALID_ARGUMENT"},
    {StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED"},
    {StatusCode::kNotFound, "NOT_FOUND"},
    {StatusCode::kAlreadyExists, "ALREADY_EXISTS"},
    {StatusCode::kPermissionDenied, "PERMISSION_DENIED"},
    {StatusCode::kResourceExhausted, "RESOURCE_EXHAUSTED"},
    {StatusCode::kFailedPrecondition, "FAILED_PRECONDITION"},
    {StatusCode::kAborted, "ABORTED"},
    {StatusCode::kOutOfRange, "OUT_OF_RANGE"},
    {StatusCode::kUnimplemented, "UNIMPLEMENTED"},
    {StatusCode::kInternal, "INTERNAL"},
    {StatusCode::kUnavailable, "UNAVAILABLE"},
    {StatusCode::kDataLoss, "DATA_LOSS"},
    {StatusCode::kUnauthenticated, "UNAUTHENTICATED"},
};
static_assert(ListsEach(kStatusCodeNames, StatusCode::kOk, StatusCode::kUnauthenticated));

// The code a system call's errno maps to; any other errno is kInternal.
struct ErrnoCode {
  int err;
  StatusCode code;
};
constexpr ErrnoCode kErrnoCodes[] = {
    {ENOENT, StatusCode::kNotFound},          {EEXIST, StatusCode::kAlreadyExists},
    {EACCES, StatusCode::kPermissionDenied},  {EPERM, StatusCode::kPermissionDenied},
    {EINVAL, StatusCode::kInvalidArgument},   {ENOMEM, StatusCode::kResourceExhausted},
    {ENOSPC, StatusCode::kResourceExhausted}, {EBUSY, StatusCode::kUnavailable},
    {EAGAIN, StatusCode::kUnavailable},
};

}  // namespace

std::string_view StatusCodeName(StatusCode code) {
  return NameOf(code, kStatusCodeNames, "UNKNOWN");
}

std::string Status::ToString() const {
  if (ok()) {
    return "OK";
  }
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::Annotate(std::string_view context) const {
  if (ok()) {
    return *this;
  }
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, std::move(message));
}

Status ErrnoError(std::string_view what, int err) {
  std::string message(what);
  message += ": ";
  message += std::strerror(err);
  StatusCode code = StatusCode::kInternal;
  for (const ErrnoCode& e : kErrnoCodes) {
    if (e.err == err) {
      code = e.code;
      break;
    }
  }
  return Status(code, std::move(message));
}

}  // namespace vgpu
