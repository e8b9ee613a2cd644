// SPDX-License-Identifier: GPL-3.0-or-later
#include "window/modelloader.h"

#include "files/messagetext.h"

#include "attnviz/modelstores.h"
#include "bundledmodel.h"

#include <QDir>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QProgressDialog>
#include <QSettings>
#include <QTimer>
#include <QWidget>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <new>
#include <stdexcept>

namespace attnviz::ui {

namespace {

const QString kRecentKey = QStringLiteral("models/recent");

struct LoadResult {
    Status status;
    std::shared_ptr<Model> model;
};

ModelLoader::Reader &reader()
{
    static ModelLoader::Reader r;
    return r;
}

// One line naming the source and what went wrong, for an exception the read let through.
Status thrown(const QString &source, const char *what)
{
    return Status::error(StatusCode::IoError, ModelLoader::title(source).toStdString() + ": cannot be read: " + what);
}

LoadResult read(const QString &source, const LoadProgress &progress)
{
    std::unique_ptr<Model> m;
    Status st;
    try {
        st = reader() ? reader()(source, m, progress) : openModelSource(source, m, progress);
    } catch (const std::bad_alloc &) {
        st = thrown(source, "out of memory");
    } catch (const std::length_error &e) {
        st = thrown(source, ("a size beyond what it can hold (" + shownText(QString::fromUtf8(e.what()), 200).toStdString() + ")").c_str());
    } catch (const std::exception &e) {
        st = thrown(source, shownText(QString::fromUtf8(e.what()), 200).toUtf8().constData());
    } catch (...) {
        st = thrown(source, "an unexpected error");
    }
    if (!st.ok())
        m.reset();
    return {st, st.ok() && m ? std::shared_ptr<Model>(std::move(m)) : nullptr};
}

} // namespace

QString ModelLoader::notShown(const QString &source, const Model &model)
{
    const ModelInfo info = model.info();
    if (!info.architecture.encoderDecoder)
        return {};
    return title(source) + QStringLiteral(": an encoder-decoder model (%1): render and bench --ui do not show its encoder, "
                                          "decoder and cross attentions yet (the window, attnviz export --view cross|alignment "
                                          "and attnviz model run --text SOURCE --target TARGET do)")
                               .arg(QString::fromStdString(info.family));
}

ModelLoader::ModelLoader(QWidget *window)
    : QObject(window)
    , m_window(window)
{
}

QString ModelLoader::canonicalSource(const QString &source)
{
    if (isBundledModelArg(source) || source.isEmpty() || isModelSpec(source.toStdString())) // hf:, ollama:
        return source;
    QFileInfo fi(source);
    if (fi.isFile() && fi.fileName() == QLatin1String("config.json")) // a dropped config.json: its folder
        fi = QFileInfo(fi.absolutePath());
    return QDir::cleanPath(fi.absoluteFilePath());
}

QString ModelLoader::title(const QString &source)
{
    if (isBundledModelArg(source))
        return bundledModelTitle(source);
    return shownText(QFileInfo(source).fileName(), 200); // a folder's name: escaped, an excerpt
}

bool ModelLoader::load(const QString &source, std::shared_ptr<Model> &out, QString *error)
{
    LoadResult r = read(canonicalSource(source), {});
    if (!r.status.ok()) {
        if (error)
            *error = QString::fromStdString(r.status.message);
        return false;
    }
    out = std::move(r.model);
    return true;
}

bool ModelLoader::start(const QString &sourceIn)
{
    if (m_busy)
        return false;
    const QString source = canonicalSource(sourceIn);
    m_busy = true;
    auto *dialog = new QProgressDialog(tr("Reading %1…").arg(title(source)), tr("Cancel"), 0, 1000, m_window);
    dialog->setWindowTitle(tr("Open model"));
    dialog->setWindowModality(Qt::WindowModal);
    dialog->setMinimumDuration(300); // small models open before it shows
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    auto fraction = std::make_shared<std::atomic<int>>(0);
    connect(dialog, &QProgressDialog::canceled, this, [cancel] { cancel->store(true); });
    auto *poll = new QTimer(dialog);
    connect(poll, &QTimer::timeout, dialog, [dialog, fraction] { dialog->setValue(fraction->load()); });
    poll->start(100);
    auto *watcher = new QFutureWatcher<LoadResult>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, dialog, source] {
        const LoadResult r = watcher->result();
        watcher->deleteLater();
        dialog->deleteLater();
        m_busy = false;
        if (r.status.code == StatusCode::Cancelled)
            return;
        if (!r.status.ok()) {
            emit failed(source, QString::fromStdString(r.status.message));
            return;
        }
        addRecent(source);
        emit loaded(source, r.model);
    });
    watcher->setFuture(QtConcurrent::run([source, cancel, fraction] {
        return read(source, [cancel, fraction](uint64_t done, uint64_t total) {
            if (total > 0)
                fraction->store(int(999.0 * double(done) / double(total)));
            return !cancel->load();
        });
    }));
    return true;
}

void ModelLoader::setReader(Reader r) { reader() = std::move(r); }

QStringList ModelLoader::recent() const { return QSettings().value(kRecentKey).toStringList(); }

void ModelLoader::addRecent(const QString &sourceIn)
{
    const QString source = canonicalSource(sourceIn);
    if (source.isEmpty())
        return;
    QStringList list = recent();
    list.removeAll(source);
    list.prepend(source);
    while (list.size() > kMaxRecent)
        list.removeLast();
    QSettings().setValue(kRecentKey, list);
    emit recentChanged();
}

} // namespace attnviz::ui
