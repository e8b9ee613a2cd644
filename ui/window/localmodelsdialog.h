// SPDX-License-Identifier: GPL-3.0-or-later
// Model ▸ On this computer: the models already on this machine (core: modelstores.h) in one list —
// name, family, parameters, size on disk, precision or quantization, where — scanned on a worker
// thread each time the dialog is shown. Models attnviz cannot compute are greyed, their reason in the
// last column and the tooltip. Double-click (or Open) asks for the model by the spec or path the
// command line takes too; the window opens it through its usual loader. Add folder… adds a folder to
// those scanned (localmodels.h, shared with `attnviz model list --add-folder`).
#pragma once

#include "attnviz/modelstores.h"

#include <QDialog>
#include <QString>

#include <functional>
#include <vector>

class QLabel;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace attnviz::ui {

class LocalModelsDialog : public QDialog {
    Q_OBJECT
public:
    explicit LocalModelsDialog(QWidget *parent = nullptr);

    // Scans again (on a worker thread); the list shows "Looking…" until scanned() is emitted.
    void rescan();
    bool scanning() const { return m_scanning; }
    // The rows' models, in the list's order (after scanned()).
    const std::vector<LocalModel> &models() const { return m_models; }
    QTreeWidget *list() const { return m_list; }

    // Folder chooser for Add folder… (tests replace it; default: QFileDialog).
    void setFolderPrompt(std::function<QString()> prompt) { m_folderPrompt = std::move(prompt); }

signals:
    // A model to open: "hf:ORG/NAME", "ollama:NAME:TAG" or a path.
    void openRequested(const QString &source);
    void scanned();

protected:
    void showEvent(QShowEvent *event) override;

private:
    void fill(const StoreScan &scan, qint64 ms);
    void openItem(QTreeWidgetItem *item);
    void selectionChanged();
    void addFolder();
    void removeFolder();

    QTreeWidget *m_list;
    QLabel *m_status;
    QPushButton *m_open, *m_remove;
    std::vector<LocalModel> m_models;
    std::function<QString()> m_folderPrompt;
    bool m_scanning = false, m_again = false;
};

} // namespace attnviz::ui
