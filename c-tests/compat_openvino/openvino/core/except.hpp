// A stand-in for OpenVINO's openvino/core/except.hpp (src/core/include in
// openvinotoolkit/openvino), written from its declarations: ov::Exception
// (from std::runtime_error) with static create(file, line, explanation),
// ov::AssertFailure (from ov::Exception) with static create(file, line,
// check_string, context_info, explanation), and the macros OPENVINO_THROW
// and OPENVINO_ASSERT, here for one argument each (all that
// <nnmem/compat/openvino/memory_solver.hpp> passes). What it throws says
// "openvino stand-in", so compat_openvino_test sees that the header threw
// through these and not through its own types.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ov {

class Exception : public std::runtime_error {
public:
    explicit Exception(const std::string& what_arg) : std::runtime_error(what_arg) {}

    [[noreturn]] static void create(const char* file, int line, const std::string& explanation) {
        throw Exception(where(file, line) + explanation);
    }

protected:
    static std::string where(const char* file, int line) {
        std::ostringstream text;
        text << "openvino stand-in: " << file << ":" << line << ": ";
        return text.str();
    }
};

class AssertFailure : public Exception {
public:
    [[noreturn]] static void create(const char* file, int line, const char* check_string,
                                    const std::string& context_info, const std::string& explanation) {
        throw AssertFailure(where(file, line) + "Check '" + check_string + "' failed" + context_info + explanation);
    }

protected:
    explicit AssertFailure(const std::string& what_arg) : Exception(what_arg) {}
};

inline void standin_assert(const char* file, int line, const char* check_string, bool holds) {
    if (!holds)
        AssertFailure::create(file, line, check_string, "", "");
}

}  // namespace ov

#define OPENVINO_THROW(...) ::ov::Exception::create(__FILE__, __LINE__, __VA_ARGS__)
#define OPENVINO_ASSERT(...) ::ov::standin_assert(__FILE__, __LINE__, #__VA_ARGS__, __VA_ARGS__)
