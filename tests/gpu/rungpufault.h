// SPDX-License-Identifier: GPL-3.0-or-later
// The GPU suites' way of running the attnviz program with a GPU fault injected (ATTNVIZ_GPU_FAULT).
#pragma once

#include "testpaths.h"

#include <QByteArray>
#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

namespace attnviz::test {

// Runs attnviz with ARGS and ATTNVIZ_GPU_FAULT=FAULT (none where empty; GPU chatter off, a private
// XDG_RUNTIME_DIR so that Qt's note about a missing one is not on stderr): true where it exits 0;
// its stderr and stdout.
inline bool runWithGpuFault(const char *fault, const QStringList &args, QString &err, QByteArray &out)
{
    QTemporaryDir runtime;
    if (!runtime.isValid())
        return false;
    QFile::setPermissions(runtime.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("ATTNVIZ_GPU_FAULT"), QString::fromLatin1(fault));
    env.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtime.path());
    env.remove(QStringLiteral("ATTNVIZ_GPU_VERBOSE"));
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(QString::fromUtf8(ATTNVIZ_BINARY), args);
    const bool finished = p.waitForFinished(120000);
    err = QString::fromUtf8(p.readAllStandardError());
    out = p.readAllStandardOutput();
    return finished && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

} // namespace attnviz::test
