// SPDX-License-Identifier: GPL-3.0-or-later
// Bringing a model folder into the window: reading it (openPretrained) on a worker thread behind a
// progress dialog whose Cancel stops the read, or blocking (sessions, tests, `--model`); the recent
// models list (QSettings "models/recent"). A source is "bundled" (bundledmodel.h) or a folder's
// absolute path. What the window does with a loaded model is the window's business (loaded()).
// An exception from the read (std::bad_alloc, std::length_error, ...) becomes its one-line
// message, on the worker as on the blocking path: it never reaches the event loop.
#pragma once

#include "attnviz/model.h"
#include "attnviz/tensorarchive.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>
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
    // Why the command-line verbs that render the window's views (render, bench --ui) cannot show
    // `model` read from `source` (an encoder-decoder model: they take no target and no attention
    // choice); empty where they can. The window opens such a model (its Target field and Attention
    // selector); export draws its cross-attention and word alignment (--view cross|alignment).
    static QString notShown(const QString &source, const Model &model);

    // Reads it on a thread behind a progress dialog; emits loaded() or failed() (nothing on Cancel).
    // One read at a time: false (and nothing started) while one runs.
    bool start(const QString &source);
    bool busy() const { return m_busy; }

    // What reads a source (openModelSource, bundledmodel.h). Tests put in one that throws, as an
    // allocation or a library may on a file the core does not foresee; an empty one restores it.
    using Reader = std::function<Status(const QString &source, std::unique_ptr<Model> &out, const LoadProgress &progress)>;
    static void setReader(Reader reader);

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
