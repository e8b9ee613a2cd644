// SPDX-License-Identifier: GPL-3.0-or-later
// Running the attnviz binary as a user does, for the command-line suites (tests/app): exit code,
// stdout and stderr. Header-only, so that Qt-Core-only suites need not link attnviz_testsupport
// (which brings the window). ATTNVIZ_BINARY comes from testpaths.h (attnviz_testpaths).
#pragma once

#include "testpaths.h"
#include <QByteArray>
#include <QProcess>
#include <QStringList>

#include <unistd.h>

namespace attnviz_test { // not attnviz::: the suites call their helper attnviz()

struct Run {
    int code = -1; // -1: crashed or did not finish in time
    QByteArray out, err;
};

// What a started process gave: its exit code (-1 when it crashed or ran past `timeoutMs`) and output.
inline Run finished(QProcess &p, int timeoutMs)
{
    Run r;
    if (!p.waitForFinished(timeoutMs))
        return r;
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

inline Run runAttnviz(const QStringList &args, int timeoutMs = 120000)
{
    QProcess p;
    p.start(QString::fromUtf8(ATTNVIZ_BINARY), args);
    return finished(p, timeoutMs);
}

// attnviz as a user to whom a file made unreadable (chmod 000) is unreadable, also where the tests
// run as root: there through setpriv with root's override of file permissions (CAP_DAC_OVERRIDE,
// CAP_DAC_READ_SEARCH) dropped from the bounding set. `possible` false when that cannot be done here.
inline Run runAttnvizUnprivileged(const QStringList &args, bool &possible, int timeoutMs = 120000)
{
    possible = true;
    if (::geteuid() != 0)
        return runAttnviz(args, timeoutMs);
    QProcess p;
    p.start(QStringLiteral("setpriv"), QStringList{QStringLiteral("--bounding-set"), QStringLiteral("-dac_override,-dac_read_search"),
                                                   QString::fromUtf8(ATTNVIZ_BINARY)} + args);
    if (!p.waitForStarted()) {
        possible = false;
        return {};
    }
    const Run r = finished(p, timeoutMs);
    if (r.err.startsWith("setpriv:")) // not permitted here (no CAP_SETPCAP)
        possible = false;
    return r;
}

} // namespace attnviz_test
