// SPDX-License-Identifier: GPL-3.0-or-later
// The verbs that need a QApplication: the window (no verb), `export` (headless figures and
// matrices, rendered by the window's own view classes) and `bench --ui`.
#pragma once

#include <QStringList>

namespace attnviz::cli {

// argv[0] first, then the options. Exit codes as in commands.h.
int gui(const QStringList &args);
int exportView(const QStringList &args);
int benchUi(const QStringList &args);

} // namespace attnviz::cli
