// SPDX-License-Identifier: GPL-3.0-or-later
// What a session holds, read from and written to the window: the table and the weight files it came
// from (and loading them: blocking, or with a progress dialog), the sentences, every control, the
// masks, the selection, the view, the lesson, the appearance and the Compare tab's side B.
// files/sessionfiles.h reads and writes the files; this class is what they hold.
#pragma once

#include "files/session.h"

#include "attnviz/embeddings.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>

namespace attnviz::ui {

class MainWindow;

class WindowState : public QObject {
    Q_OBJECT
public:
    explicit WindowState(MainWindow *window);

    SessionState capture() const;
    // Sets `s` through the window's own setters; lists in `problems` what it could not apply (a
    // missing embeddings file: the table in use stays) while applying the rest.
    void apply(const SessionState &s, QStringList *problems);

    void setEmbeddingTable(std::shared_ptr<const EmbeddingTable> table, const QString &description);
    void setTableFrom(std::shared_ptr<const EmbeddingTable> table, const QString &description, TableKind kind,
                      const QString &pathOrName);
    void useBundled();
    // Loads a table now (blocking); on failure the current table stays and `error` says why.
    bool loadEmbeddingsFile(const QString &path, QString *error);
    // Asks for a table file and reads it on a thread behind a progress dialog (Cancel stops it).
    void startLoadEmbeddings();
    bool loadProjectionsFile(const QString &path, QString *error);
    bool loadStackWeightsFile(const QString &path, QString *error);
    // Ask for a file, load it, and say why when it cannot be (the weights in use stay).
    void askProjectionsFile();
    void askStackWeightsFile();

signals:
    void changed(); // something a session holds changed (the window updates its modified mark)

private:
    MainWindow *m_w;
    // Where the table and the weight files came from, for capture().
    TableKind m_tableKind = TableKind::Unsaved;
    QString m_tablePath, m_tableName;
    QString m_projectionsPath, m_stackWeightsPath;
    bool m_loading = false;
};

} // namespace attnviz::ui
