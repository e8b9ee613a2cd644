// SPDX-License-Identifier: GPL-3.0-or-later
// Session-file handling of a window (README "Session files"): open, save and restore *.attnviz files,
// the recent list, the title with its unsaved-changes mark and the question before changes are lost.
// What a session holds is the window's business: it hands over two functions, one that captures the
// state and one that applies it (listing what it could not apply).
#pragma once

#include "files/session.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>

class QMainWindow;
class QMenu;

namespace attnviz::ui {

class SessionFiles : public QObject {
    Q_OBJECT
public:
    using Capture = std::function<SessionState()>;
    using Apply = std::function<void(const SessionState &, QStringList *problems)>;
    SessionFiles(QMainWindow *window, Capture capture, Apply apply);

    // New, Open, Open recent, Save, Save as, added to the File menu.
    void addFileActions(QMenu *file);

    // Opens a *.attnviz file. A file that cannot be read, is not JSON (truncated) or not a session
    // changes nothing; otherwise what can be applied is, and `report` (also the status bar, and a
    // non-modal dialog when something could not be applied) says what could not. Never writes the file.
    bool openSession(const QString &path, QString *report);
    // Writes the session atomically (QSaveFile); on failure nothing is written and `error` says why.
    bool saveSession(const QString &path, QString *error);
    // The session, window geometry and dock layout stored at the last close (QSettings), applied with
    // openSession's problem handling. False (nothing changes) when none is stored or it cannot be read.
    bool restoreLastSession(QString *report = nullptr);
    QString sessionPath() const { return m_sessionPath; }
    QStringList recentSessions() const;
    static constexpr int kMaxRecent = 8;

    // What the window asks; replaceable so tests can answer.
    enum class SaveAnswer { Save, Discard, Cancel };
    using SavePrompt = std::function<SaveAnswer(const QString &sessionName)>;
    using PathPrompt = std::function<QString(const QString &suggested)>; // "" = cancelled
    void setSavePrompt(SavePrompt p) { m_savePrompt = std::move(p); }
    void setSaveAsPrompt(PathPrompt p) { m_saveAsPrompt = std::move(p); }
    void setOpenPrompt(PathPrompt p) { m_openPrompt = std::move(p); }
    // The File menu's verbs: each asks about unsaved changes first and returns false when cancelled.
    bool newSession();
    bool openSessionInteractive(const QString &path = QString()); // "" = ask for a file
    bool saveInteractive(bool saveAs);
    // The window closes: asks about unsaved changes (false: stay open), then stores what the next
    // start restores.
    bool close();

    // The state as it is now becomes the clean one (saved, opened, started).
    void markClean();
    // Compares the state with the clean one and sets the window's modified mark.
    void updateModified();

private:
    QString sessionName() const;
    void updateTitle();
    bool maybeSave();
    void addRecent(const QString &path);
    void rebuildRecentMenu();
    void showProblems(const QString &title, const QString &text);

    QMainWindow *m_window;
    Capture m_capture;
    Apply m_apply;
    QString m_sessionPath;         // "" = untitled
    bool m_saveAsks = false;       // opened with problems: Save asks for a name instead of overwriting it
    bool m_forcedModified = false; // restored with unsaved changes
    bool m_discarded = false;      // the user chose Discard while closing
    SessionState m_clean;          // as last saved / opened / started
    SavePrompt m_savePrompt;
    PathPrompt m_saveAsPrompt, m_openPrompt;
    QMenu *m_recentMenu = nullptr;
};

} // namespace attnviz::ui
