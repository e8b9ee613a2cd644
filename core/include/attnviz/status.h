// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <string_view>

namespace attnviz {

// Outcome of a core call. Errors carry one line that names the offending field or file.
enum class StatusCode {
    Ok,
    InvalidInput,  // shapes, sizes, options that do not fit together
    NonFinite,     // NaN or Inf in an input
    ParseError,    // malformed file (JSON, embeddings, weights)
    IoError,       // cannot open / read / write
    Cancelled,     // a progress callback asked to stop
    Unavailable,   // a backend that cannot start here
    BackendFailed, // a backend started but failed (device lost, out of memory, shader error)
};

struct Status {
    StatusCode code = StatusCode::Ok;
    std::string message;

    bool ok() const { return code == StatusCode::Ok; }
    explicit operator bool() const { return ok(); }
    static Status success() { return {}; }
    static Status error(StatusCode c, std::string m) { return {c, std::move(m)}; }
};

const char *toString(StatusCode code);

// The one way text from a file or the command line enters a message (fileio.cpp): control
// characters (line breaks, ESC of a terminal escape) written as \xNN, and the C1 controls (U+009B,
// the 8-bit CSI) and bidirectional overrides (U+202E) as \uNNNN, so that nothing a file holds
// can clear a screen or forge a second line, and a long string cut to an excerpt so that a 5 MB
// field does not become a 5 MB line.
//   quoteText("ab\ncd")         -> "\"ab\\x0acd\""
//   quoteText(5 MB of 'x')      -> "\"xxxx...xxxx\"... (5.0 MB)" (the first `max` bytes, whole UTF-8 characters)
std::string quoteText(std::string_view text, size_t max = 64);
// A whole message made safe to print: control characters as \xNN, at most `max` bytes (cut with
// "... (N bytes in all)"). Every place that prints a Status message passes it through this.
std::string printable(std::string_view message, size_t max = 2000);

} // namespace attnviz
