// SPDX-License-Identifier: GPL-3.0-or-later
// Bringing a model folder into the window: reading it (openPretrained) on a worker thread behind a
// progress dialog whose Cancel stops the read, or blocking (sessions, tests, `--model`); the recent
// models list (QSettings "models/recent"). A source is "bundled" (bundledmodel.h) or a folder's
// absolute path. What the window does with a loaded model is the window's business (loaded()).
#pragma once

#include "attnviz/model.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>

class QWidget;

namespace attnviz::ui {

class ModelLoader : public QObject {
    Q_OBJECT
public:
    static constexpr int kMaxRecent = 8;

    explicit ModelLoader(QWidget *window);

    // "bundled" and hf:/ollama: specs stay as they are; a folder (or a config.json in it) becomes its absolute clean path.
    static QString canonicalSource(const QString &source);
    // How menus and messages name a source: "attnviz-tiny (bundled)", or the folder's name.
    static QString title(const QString &source);
    // Reads the model now. False, `out` untouched and `error` the core's message (naming the file and
    // the tensor or field) when it cannot be read.
    static bool load(const QString &source, std::shared_ptr<Model> &out, QString *error);

    // Reads it on a thread behind a progress dialog; emits loaded() or failed() (nothing on Cancel).
    // One read at a time: false (and nothing started) while one runs.
    bool start(const QString &source);
    bool busy() const { return m_busy; }

    QStringList recent() const;
    void addRecent(const QString &source);

signals:
    void loaded(const QString &source, std::shared_ptr<attnviz::Model> model);
    void failed(const QString &source, const QString &message);
    void recentChanged();

private:
    QWidget *m_window;
    bool m_busy = false;
};

} // namespace attnviz::ui
