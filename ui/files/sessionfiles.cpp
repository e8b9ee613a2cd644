// SPDX-License-Identifier: GPL-3.0-or-later
#include "files/sessionfiles.h"
#include "files/messagetext.h"
#include "files/outputfile.h"

#include "bundledmodel.h"
#include "bundledvectors.h"

#include "attnviz/fileio.h"
#include "attnviz/modelstores.h"

#include <QAction>
#include <QCloseEvent>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>

#include <algorithm>

namespace attnviz::ui {

namespace {

// What could not be used (a model, a file, a value) ahead of the keys ignored, which a list cut
// to its first lines may leave out.
void importantFirst(QStringList &problems)
{
    std::stable_partition(problems.begin(), problems.end(),
                          [](const QString &p) { return !p.startsWith(QLatin1String("ignored: ")); });
}

} // namespace

SessionFiles::SessionFiles(QMainWindow *window, Capture capture, Apply apply)
    : QObject(window)
    , m_window(window)
    , m_capture(std::move(capture))
    , m_apply(std::move(apply))
{
    m_savePrompt = [window](const QString &name) {
        const auto b = QMessageBox::question(window, tr("Unsaved changes"), tr("Save changes to %1?").arg(name),
                                             QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel,
                                             QMessageBox::Save);
        return b == QMessageBox::Save ? SaveAnswer::Save : b == QMessageBox::Discard ? SaveAnswer::Discard : SaveAnswer::Cancel;
    };
    m_saveAsPrompt = [window](const QString &suggested) {
        return QFileDialog::getSaveFileName(window, tr("Save session"), suggested, tr("attnviz sessions (*.attnviz)"));
    };
    m_openPrompt = [window](const QString &dir) {
        return QFileDialog::getOpenFileName(window, tr("Open session"), dir,
                                            tr("attnviz sessions (*.attnviz);;All files (*)"));
    };
}

void SessionFiles::addFileActions(QMenu *file)
{
    file->addAction(tr("&New session"), QKeySequence::New, this, [this] { newSession(); });
    file->addAction(tr("&Open session…"), QKeySequence(tr("Ctrl+O")), this, [this] { openSessionInteractive(); });
    m_recentMenu = file->addMenu(tr("Open &recent"));
    m_recentMenu->setObjectName(QStringLiteral("recentMenu"));
    connect(m_recentMenu, &QMenu::aboutToShow, this, &SessionFiles::rebuildRecentMenu);
    rebuildRecentMenu();
    file->addAction(tr("&Save"), QKeySequence(tr("Ctrl+S")), this, [this] { saveInteractive(false); });
    file->addAction(tr("Save &as…"), QKeySequence(tr("Ctrl+Shift+S")), this, [this] { saveInteractive(true); });
}

bool SessionFiles::close()
{
    m_discarded = false;
    if (!maybeSave())
        return false;
    // What the next start restores: the session as it is now, or as last saved when the changes were
    // discarded.
    const SessionState last = m_discarded ? m_clean : m_capture();
    QSettings settings;
    settings.setValue(QStringLiteral("session/last"),
                      QString::fromUtf8(QJsonDocument(sessionToJson(last)).toJson(QJsonDocument::Compact)));
    settings.setValue(QStringLiteral("session/lastPath"), m_sessionPath);
    settings.setValue(QStringLiteral("session/lastModified"), !m_discarded && m_window->isWindowModified());
    settings.setValue(QStringLiteral("window/geometry"), m_window->saveGeometry());
    settings.setValue(QStringLiteral("window/state"), m_window->saveState());
    return true;
}

bool SessionFiles::openSession(const QString &path, QString *report)
{
    const QString name = QFileInfo(path).fileName();
    const auto fail = [&](const QString &why) {
        const QString text = shownText(tr("could not open %1: %2").arg(path, why));
        m_window->statusBar()->showMessage(text);
        if (report)
            *report = text;
        return false;
    };
    if (QFileInfo(path).isDir())
        return fail(tr("it is a folder"));
    std::string bytes; // a regular file of at most 16 MB: never /dev/zero, a FIFO or a device (fileio.h)
    if (const Status st = readRegularFile(path.toStdString(), kMaxSessionBytes, bytes); !st)
        return fail(QString::fromStdString(st.message).remove(0, path.toUtf8().size() + 2)); // "PATH: " is said
    QJsonObject json;
    QString why;
    if (!parseSessionText(QByteArray::fromStdString(bytes), json, why))
        return fail(why);
    SessionState s; // the defaults: what an older file without a section gets
    QStringList problems;
    if (!sessionFromJson(json, s, &problems))
        return fail(problems.join(QStringLiteral("; ")));
    // Paths in the file may be relative to the file's folder (the model folder too; `bundled`,
    // `bundled-gpt2` and `bundled-dates` name the models that come with attnviz, hf:/ollama: specs a model
    // in a store, not a folder).
    const QDir dir = QFileInfo(path).absoluteDir();
    for (QString *p : {&s.tablePath, &s.projectionsFile, &s.stackWeightsFile, &s.model})
        if (!p->isEmpty() && !(p == &s.model && (isBundledModelArg(*p) || isModelSpec(p->toStdString()))))
            *p = QDir::cleanPath(dir.absoluteFilePath(*p));
    m_apply(s, &problems);
    importantFirst(problems);
    m_sessionPath = QFileInfo(path).absoluteFilePath();
    m_saveAsks = !problems.isEmpty(); // saving it back would lose what could not be read
    markClean();
    addRecent(m_sessionPath);
    QString text;
    if (problems.isEmpty()) {
        text = tr("Opened %1").arg(shownText(path));
    } else {
        text = tr("Opened %1; what could not be opened:\n%2").arg(shownText(path), shownList(problems));
        showProblems(tr("Opened %1 with problems").arg(shownText(name, 200)), text);
    }
    m_window->statusBar()->showMessage(QString(text).replace(QLatin1Char('\n'), QLatin1Char(' ')));
    if (report)
        *report = text;
    return true;
}

bool SessionFiles::saveSession(const QString &path, QString *error)
{
    const auto fail = [&](const QString &why) {
        if (error)
            *error = tr("could not write %1: %2").arg(path, why);
        return false;
    };
    if (path.isEmpty())
        return fail(tr("no file name"));
    if (QFileInfo(path).isDir())
        return fail(tr("it is a folder"));
    const QByteArray data = QJsonDocument(sessionToJson(m_capture())).toJson(QJsonDocument::Indented);
    QString why;
    if (!writeOutputFile(path, data, why))
        return fail(why);
    m_sessionPath = QFileInfo(path).absoluteFilePath();
    m_saveAsks = false;
    markClean();
    addRecent(m_sessionPath);
    m_window->statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
    return true;
}

bool SessionFiles::restoreLastSession(QString *report)
{
    QSettings settings;
    m_window->restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    m_window->restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    const QString json = settings.value(QStringLiteral("session/last")).toString();
    if (json.isEmpty())
        return false;
    const auto fail = [&](const QString &why) {
        const QString text = shownText(tr("could not restore the last session: %1").arg(why));
        m_window->statusBar()->showMessage(text);
        if (report)
            *report = text;
        return false;
    };
    QJsonObject stored;
    QString why;
    if (!parseSessionText(json.toUtf8(), stored, why))
        return fail(why);
    SessionState s;
    QStringList problems;
    if (!sessionFromJson(stored, s, &problems))
        return fail(problems.join(QStringLiteral("; ")));
    m_apply(s, &problems);
    importantFirst(problems);
    const QString path = settings.value(QStringLiteral("session/lastPath")).toString();
    m_sessionPath = !path.isEmpty() && QFileInfo::exists(path) ? path : QString();
    m_saveAsks = !problems.isEmpty();
    markClean();
    m_forcedModified = settings.value(QStringLiteral("session/lastModified")).toBool() || (!path.isEmpty() && m_sessionPath.isEmpty());
    updateModified();
    QString text = tr("Restored the last session");
    if (!problems.isEmpty()) {
        text += tr("; what could not be restored:\n%1").arg(shownList(problems));
        showProblems(tr("Restored the last session with problems"), text);
    }
    m_window->statusBar()->showMessage(QString(text).replace(QLatin1Char('\n'), QLatin1Char(' ')), 8000);
    if (report)
        *report = text;
    return true;
}

QString SessionFiles::sessionName() const
{
    return m_sessionPath.isEmpty() ? tr("Untitled") : QFileInfo(m_sessionPath).fileName();
}

void SessionFiles::updateTitle()
{
    m_window->setWindowTitle(tr("%1[*] — attnviz").arg(sessionName()));
}

void SessionFiles::markClean()
{
    m_clean = m_capture();
    m_forcedModified = false;
    m_window->setWindowModified(false);
    updateTitle();
}

void SessionFiles::updateModified()
{
    m_window->setWindowModified(m_forcedModified || m_capture() != m_clean);
}

bool SessionFiles::maybeSave()
{
    if (!m_window->isWindowModified())
        return true;
    switch (m_savePrompt(sessionName())) {
    case SaveAnswer::Save: return saveInteractive(false);
    case SaveAnswer::Discard: m_discarded = true; return true;
    case SaveAnswer::Cancel: return false;
    }
    return false;
}

bool SessionFiles::saveInteractive(bool saveAs)
{
    QString path = m_sessionPath;
    if (saveAs || path.isEmpty() || m_saveAsks) {
        QSettings settings;
        const QString dir = settings.value(QStringLiteral("session/lastDir")).toString();
        const QString suggested = path.isEmpty() ? QDir(dir).filePath(QStringLiteral("lesson.attnviz")) : path;
        path = m_saveAsPrompt(suggested);
        if (path.isEmpty())
            return false;
        if (QFileInfo(path).suffix().isEmpty())
            path += QStringLiteral(".attnviz");
        settings.setValue(QStringLiteral("session/lastDir"), QFileInfo(path).absolutePath());
    }
    QString error;
    if (!saveSession(path, &error)) {
        warnPlain(m_window, tr("Cannot save the session"), shownText(error));
        return false;
    }
    return true;
}

bool SessionFiles::newSession()
{
    m_discarded = false;
    if (!maybeSave())
        return false;
    SessionState fresh;
    if (!hasBundledEmbeddings())
        fresh.tableKind = TableKind::Unsaved; // keep the loaded table
    m_apply(fresh, nullptr);
    m_sessionPath.clear();
    m_saveAsks = false;
    markClean();
    m_window->statusBar()->showMessage(tr("New session"), 3000);
    return true;
}

bool SessionFiles::openSessionInteractive(const QString &given)
{
    m_discarded = false;
    if (!maybeSave())
        return false;
    QString path = given;
    if (path.isEmpty()) {
        QSettings settings;
        path = m_openPrompt(settings.value(QStringLiteral("session/lastDir")).toString());
        if (path.isEmpty())
            return false;
        settings.setValue(QStringLiteral("session/lastDir"), QFileInfo(path).absolutePath());
    }
    QString report;
    if (!openSession(path, &report)) {
        showProblems(tr("Cannot open the session"), report + tr("\n\nNothing was changed."));
        return false;
    }
    return true;
}

QStringList SessionFiles::recentSessions() const
{
    return QSettings().value(QStringLiteral("recentSessions")).toStringList();
}

void SessionFiles::addRecent(const QString &path)
{
    QStringList recent = recentSessions();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    QSettings().setValue(QStringLiteral("recentSessions"), recent);
    rebuildRecentMenu();
}

void SessionFiles::rebuildRecentMenu()
{
    m_recentMenu->clear();
    const QStringList recent = recentSessions();
    int missing = 0;
    for (const QString &path : recent) {
        const bool exists = QFileInfo::exists(path);
        QAction *a = m_recentMenu->addAction(exists ? QFileInfo(path).fileName()
                                                    : tr("%1 (missing)").arg(QFileInfo(path).fileName()));
        a->setToolTip(path);
        a->setData(path);
        a->setEnabled(exists); // greyed: the file was moved or deleted
        missing += exists ? 0 : 1;
        connect(a, &QAction::triggered, this, [this, path] { openSessionInteractive(path); });
    }
    if (recent.isEmpty())
        m_recentMenu->addAction(tr("No recent sessions"))->setEnabled(false);
    if (missing > 0) {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Remove missing files from the list"), this, [this] {
            QStringList kept, gone;
            for (const QString &p : recentSessions())
                (QFileInfo::exists(p) ? kept : gone) << p;
            QSettings().setValue(QStringLiteral("recentSessions"), kept);
            m_window->statusBar()->showMessage(tr("Removed from the recent sessions (missing): %1").arg(gone.join(QStringLiteral(", "))), 8000);
            rebuildRecentMenu();
        });
    }
}

void SessionFiles::showProblems(const QString &title, const QString &text)
{
    auto *box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, m_window);
    box->setObjectName(QStringLiteral("sessionProblems"));
    box->setTextFormat(Qt::PlainText); // names and values from the file are not markup
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setModal(false); // a report to read beside the window, not a question
    box->show();
}

} // namespace attnviz::ui
