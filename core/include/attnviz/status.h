// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

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

} // namespace attnviz
