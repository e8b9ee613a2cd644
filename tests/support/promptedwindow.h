// SPDX-License-Identifier: GPL-3.0-or-later
// The main window with its dialogs answered by the test (messages collected, no folder asked for),
// typing without the debounce, and waiting for what it shows: for the suites that open models in it.
#pragma once

#include "mainwindow.h"
#include "testsupport.h"

#include "live/livesession.h"

#include <QStringList>

namespace attnviz::test {

struct PromptedWindow {
    ui::MainWindow w;
    QStringList messages;
    PromptedWindow()
    {
        w.setMessagePrompt([this](const QString &, const QString &text) { messages << text; });
        w.setFolderPrompt([] { return QString(); });
        w.session()->setDebounceMs(0);
        w.resize(1200, 800);
        w.show();
    }
    // Types `text` and waits for the views to show it.
    ui::SnapshotPtr show(const QString &text)
    {
        const quint64 g = shownGeneration(*w.session());
        w.setSentence(text);
        return waitForSnapshot(*w.session(), g, [&](const ui::ComputeSnapshot &s) { return s.sentence == text && s.hasResult(); },
                               30000);
    }
    // Waits for the snapshot after a change of model, head or layer.
    ui::SnapshotPtr settle()
    {
        const quint64 g = shownGeneration(*w.session());
        w.session()->requestNow();
        return waitForSnapshot(*w.session(), g, {}, 30000);
    }
};

} // namespace attnviz::test
