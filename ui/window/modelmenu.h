// SPDX-License-Identifier: GPL-3.0-or-later
// The Model menu (word vectors of the seed notebooks, the bundled attnviz-tiny, "Open model folder…",
// "On this computer…" (LocalModelsDialog), the recent models; the model in use checked) and the File menu's "Open model…" and "Recent models".
// Rebuilt from the window's current source and the loader's recent list whenever either changes.
#pragma once

#include <QObject>
#include <QString>

class QAction;
class QActionGroup;
class QMenu;

namespace attnviz::ui {

class MainWindow;
class ModelLoader;
class LocalModelsDialog;

class ModelMenu : public QObject {
    Q_OBJECT
public:
    ModelMenu(MainWindow *window, ModelLoader *loader, QMenu *modelMenu, QMenu *fileMenu);

    // Checks the entry of `source` ("" = word vectors, "bundled", or a folder).
    void setCurrent(const QString &source);
    QMenu *menu() const { return m_menu; }
    // Model ▸ On this computer…: the dialog, made on first use, scanning each time it is shown.
    void showLocalModels();
    LocalModelsDialog *localModels() const { return m_local; }

private:
    void rebuild();

    MainWindow *m_window;
    ModelLoader *m_loader;
    QMenu *m_menu, *m_recentFile;
    QActionGroup *m_group = nullptr;
    LocalModelsDialog *m_local = nullptr;
    QString m_current;
};

} // namespace attnviz::ui
