// result.h - errors as values for quench's C++ code (STYLE.md §4): Result<T> holds a T or an
// Error with an errno (0 when not a system error) and a message that names what failed.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace qn {

struct Error {
	int code = 0;        // errno, or 0 for input/validation errors
	std::string message; // what failed, with context (file:line: field ...)

	std::string to_string() const
	{
		if (code == 0)
			return message;
		return message + ": " + std::strerror(code);
	}
};

inline Error make_error(std::string msg) { return Error{0, std::move(msg)}; }
inline Error sys_error(int err, std::string msg) { return Error{err < 0 ? -err : err, std::move(msg)}; }

template <typename T> class [[nodiscard]] Result {
public:
	Result(T value) : v_(std::move(value)) {}
	Result(Error err) : v_(std::move(err)) {}

	bool ok() const { return std::holds_alternative<T>(v_); }
	explicit operator bool() const { return ok(); }
	T &value() & { return std::get<T>(v_); }
	const T &value() const & { return std::get<T>(v_); }
	T &&value() && { return std::get<T>(std::move(v_)); }
	T *operator->() { return &std::get<T>(v_); }
	const T *operator->() const { return &std::get<T>(v_); }
	T &operator*() { return std::get<T>(v_); }
	const Error &error() const { return std::get<Error>(v_); }

private:
	std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Status(Ok{}); }

} // namespace qn

// Propagate an error from an expression returning Result/Status.
#define QN_TRY(expr)                                                                               \
	do {                                                                                       \
		auto qn_try_r_ = (expr);                                                           \
		if (!qn_try_r_.ok())                                                               \
			return qn_try_r_.error();                                                  \
	} while (0)
