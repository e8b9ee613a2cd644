// SPDX-License-Identifier: GPL-3.0-or-later
// The main window only assembles: editors and token chips on top, the views as tabs, the
// controls and the selected-query bar chart as docks, the status bar. The state lives in
// LiveSession; each view is its own class.
#pragma once

#include "figureexport.h"
#include "livetypes.h"

#include <QMainWindow>

#include <memory>

class QLabel;
class QProgressBar;
class QTabWidget;

namespace attnviz::ui {

class ControlPanel;
class EmbeddingView;
class HeadGridView;
class HeatmapView;
class LayerGridView;
class LinesView;
class ResidualView;
class LiveSession;
class RowView;
class SentenceEdit;
class TokenChipsView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    static QString defaultSentence() { return QStringLiteral("I must go back to my ship and to my crew"); }

    // Uses the bundled vectors when this build has them.
    explicit MainWindow(QWidget *parent = nullptr);
    ~MainWindow() override;

    void setEmbeddingTable(std::shared_ptr<const EmbeddingTable> table, const QString &description);
    // Loads a table now (blocking); on failure the current table stays and `error` says why.
    bool loadEmbeddingsFile(const QString &path, QString *error);
    bool loadProjectionsFile(const QString &path, QString *error);
    // Stack weights from a safetensors file with GPT-2 names; on failure nothing changes and `error`
    // names the tensor.
    bool loadStackWeightsFile(const QString &path, QString *error);
    void setSentence(const QString &text);
    void setKeySentence(const QString &text);

    LiveSession *session() const { return m_session; }
    ControlPanel *controls() const { return m_controls; }
    HeatmapView *heatmapView() const { return m_heatmap; }
    HeadGridView *headGridView() const { return m_grid; }
    EmbeddingView *embeddingView() const { return m_embeddings; }
    RowView *rowView() const { return m_row; }
    LayerGridView *layerGridView() const { return m_layerGrid; }
    ResidualView *residualView() const { return m_residual; }
    LinesView *linesView() const { return m_lines; }
    SentenceEdit *sentenceEdit() const { return m_queryEdit; }
    SentenceEdit *keySentenceEdit() const { return m_keyEdit; }
    TokenChipsView *queryChips() const { return m_queryChips; }
    TokenChipsView *keyChips() const { return m_keyChips; }
    QTabWidget *tabs() const { return m_tabs; }
    QString statusText() const;
    ExportView currentView() const;
    QCustomPlot *plotFor(ExportView v) const;

signals:
    // After a snapshot reached every view (their replots are queued).
    void viewsUpdated(quint64 generation);

protected:
    void closeEvent(QCloseEvent *e) override;

private:
    void buildMenus();
    void onSnapshot(SnapshotPtr s);
    void onSelection(int head, int query);
    void onTokenClicked(bool keyChips, int index);
    void startLoadEmbeddings();
    void useBundled();
    void exportFigure(ExportView view);
    void exportPlot(QCustomPlot *plot, const QString &name); // the size dialog, then saveFigure
    void exportMatrices();

    LiveSession *m_session = nullptr;

    QString m_backendMode = QStringLiteral("cpu"); // cpu, gpu, auto: what m_session computes with
    ControlPanel *m_controls = nullptr;
    HeatmapView *m_heatmap = nullptr;
    HeadGridView *m_grid = nullptr;
    EmbeddingView *m_embeddings = nullptr;
    RowView *m_row = nullptr;
    LayerGridView *m_layerGrid = nullptr;
    ResidualView *m_residual = nullptr;
    LinesView *m_lines = nullptr;
    SentenceEdit *m_queryEdit = nullptr, *m_keyEdit = nullptr;
    TokenChipsView *m_queryChips = nullptr, *m_keyChips = nullptr;
    QTabWidget *m_tabs = nullptr;
    QLabel *m_status = nullptr, *m_notice = nullptr;
    QProgressBar *m_progress = nullptr;
    bool m_loading = false;
};

} // namespace attnviz::ui
