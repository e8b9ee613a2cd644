// SPDX-License-Identifier: GPL-3.0-or-later
// What every verb of the command line prints and writes goes through here: one message line per
// failure (printable(): nothing a file holds reaches the terminal raw, at most an excerpt of it),
// outputs through OutputFile (a pipe or a device written in place, never replaced), and standard
// output checked for write errors (`> /dev/full` fails with a message, not exit 0).
#pragma once

#include <QString>

#include <string>

namespace attnviz {
struct Status;
}

namespace attnviz::cli {

// The exit code for a failed Status (README "Exit codes"): 2 when the input cannot be used (an
// argument, or a file that is missing, unreadable, not a regular file, too large or malformed), 1
// when attnviz could not finish on usable input (cancelled, a backend that failed, memory that ran
// out while converting weights). Outputs that cannot be written are 1 too (writeOutput's callers).
int exitCodeFor(const Status &st);

// "attnviz VERB: MESSAGE" (or "attnviz: MESSAGE" for an empty verb) on stderr; returns `code`.
int fail(const char *verb, const std::string &message, int code);
int fail(const char *verb, const QString &message, int code);
int fail(const char *verb, const char *message, int code);

// `bytes` to `path`, or to standard output for "" and "-"; false with "PATH: cannot write (why)".
bool writeOutput(const QString &path, const QByteArray &bytes, std::string &error);
bool writeOutput(const QString &path, const std::string &bytes, std::string &error);

// Flushes standard output; false with the reason when what was printed could not all be written.
bool flushStdout(std::string &why);

} // namespace attnviz::cli
