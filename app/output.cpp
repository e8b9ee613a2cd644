// SPDX-License-Identifier: GPL-3.0-or-later
// The command line's messages and outputs (output.h).
#include "output.h"

#include "attnviz/status.h"
#include "files/outputfile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace attnviz::cli {

int exitCodeFor(const Status &st)
{
    switch (st.code) {
    case StatusCode::Cancelled:
    case StatusCode::BackendFailed: return 1;
    default: return 2;
    }
}

int fail(const char *verb, const std::string &message, int code)
{
    const std::string line = printable(message);
    if (verb && *verb)
        std::fprintf(stderr, "attnviz %s: %s\n", verb, line.c_str());
    else
        std::fprintf(stderr, "attnviz: %s\n", line.c_str());
    return code;
}

int fail(const char *verb, const QString &message, int code) { return fail(verb, message.toStdString(), code); }

int fail(const char *verb, const char *message, int code) { return fail(verb, std::string(message), code); }

bool flushStdout(std::string &why)
{
    errno = 0;
    if (std::fflush(stdout) == 0 && !std::ferror(stdout))
        return true;
    why = std::string("cannot write the standard output (") + (errno ? std::strerror(errno) : "write error") + ")";
    return false;
}

bool writeOutput(const QString &path, const QByteArray &bytes, std::string &error)
{
    if (path.isEmpty() || path == QLatin1String("-")) {
        if (std::fwrite(bytes.constData(), 1, size_t(bytes.size()), stdout) != size_t(bytes.size()) || !flushStdout(error)) {
            if (error.empty())
                error = "cannot write the standard output";
            return false;
        }
        return true;
    }
    QString why;
    if (!ui::writeOutputFile(path, bytes, why)) {
        error = (path + QStringLiteral(": cannot write (") + why + QLatin1Char(')')).toStdString();
        return false;
    }
    return true;
}

bool writeOutput(const QString &path, const std::string &bytes, std::string &error)
{
    return writeOutput(path, QByteArray::fromStdString(bytes), error);
}

} // namespace attnviz::cli
