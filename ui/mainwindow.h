// SPDX-License-Identifier: GPL-3.0-or-later
// The main window only assembles: editors and token chips on top, the views as tabs, the
// controls and the selected-query bar chart as docks, the status bar. The state lives in
// LiveSession; each view is its own class.
#pragma once

#include "appearance.h"
#include "figureexport.h"
#include "livetypes.h"
#include "session.h"

#include <QMainWindow>
#include <QPointer>

#include <functional>
#include <memory>
#include <vector>

class QAction;
class QActionGroup;
class QLabel;
class QMenu;
class QShortcut;
class QProgressBar;
class QTabWidget;

namespace attnviz::ui {

class CompareView;
struct CompareSide;
struct ComparisonSpec;
class ControlPanel;
class EmbeddingView;
class HeadGridView;
class HeatmapView;
class LayerGridView;
class LessonPanel;
class LinesView;
class ResidualView;
class LiveSession;
class PipelineView;
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
    // Sets the table, sentences, every control, the selection and the view of a preset (presets.h)
    // and shows its explanation; false for an unknown id or a preset this build cannot show.
    bool applyPreset(const QString &id);
    // Shows the tab of a view by its stable id (session.h SessionTab: "weights", "pipeline" …); the
    // view widget's object name is the id + "View".
    bool showView(const QString &id);
    QString currentViewId() const;
    LessonPanel *lessonPanel() const { return m_lesson; }
    // Full screen, large text, high contrast, only the Lesson dock; Right/Left/Space/PageUp/PageDown
    // step through the stages, Esc leaves and restores the docks and the appearance.
    void setPresentationMode(bool on);
    bool presentationMode() const { return m_presenting; }
    void presentationStep(int delta);
    void setSentence(const QString &text);
    void setKeySentence(const QString &text);
    // Sets A (the window: sentence, settings, table) and B (the Compare tab), then shows that tab.
    void startComparison(const ComparisonSpec &spec);

    LiveSession *session() const { return m_session; }
    ControlPanel *controls() const { return m_controls; }
    HeatmapView *heatmapView() const { return m_heatmap; }
    HeadGridView *headGridView() const { return m_grid; }
    EmbeddingView *embeddingView() const { return m_embeddings; }
    RowView *rowView() const { return m_row; }
    LayerGridView *layerGridView() const { return m_layerGrid; }
    ResidualView *residualView() const { return m_residual; }
    PipelineView *pipelineView() const { return m_pipeline; }
    CompareView *compareView() const { return m_compare; }
    LinesView *linesView() const { return m_lines; }
    SentenceEdit *sentenceEdit() const { return m_queryEdit; }
    SentenceEdit *keySentenceEdit() const { return m_keyEdit; }
    TokenChipsView *queryChips() const { return m_queryChips; }
    TokenChipsView *keyChips() const { return m_keyChips; }
    QTabWidget *tabs() const { return m_tabs; }
    QString statusText() const;
    ExportView currentView() const;
    QCustomPlot *plotFor(ExportView v) const;

    // Sessions (README "Session files"). captureSession() is everything a session file holds;
    // applySession() sets it through the window's own setters, and lists in `problems` what it could
    // not apply (a missing embeddings file: the table in use stays) while applying the rest.
    SessionState captureSession() const;
    void applySession(const SessionState &s, QStringList *problems);
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

signals:
    // After a snapshot reached every view (their replots are queued).
    void viewsUpdated(quint64 generation);
    void presentationModeChanged(bool on);

protected:
    void closeEvent(QCloseEvent *e) override;
    void showEvent(QShowEvent *e) override;

private:
    void buildMenus();
    void buildViewMenu();
    void onAppearanceChanged();
    void onSnapshot(SnapshotPtr s);
    void onSelection(int head, int query);
    void onTokenClicked(bool keyChips, int index);
    void startLoadEmbeddings();
    void useBundled();
    void exportFigure(ExportView view);
    // the size dialog, then saveFigure (`titleLine`: FigureOptions::titleLine)
    void exportPlot(QCustomPlot *plot, const QString &name, const QString &titleLine = QString());
    void exportMatrices();
    void exportPipelineStage(); // Ctrl+E on the Pipeline tab: one stage
    void exportComparePart();   // Ctrl+E on the Compare tab: A and B, or the difference / focus word
    void setTableFrom(std::shared_ptr<const EmbeddingTable> table, const QString &description, TableKind kind,
                      const QString &pathOrName);
    QString tabId() const;
    QWidget *tabForId(const QString &id) const;
    QString sessionName() const;
    void updateModified();
    void updateTitle();
    void markClean();
    bool maybeSave();
    void addRecent(const QString &path);
    void rebuildRecentMenu();
    void showProblems(const QString &title, const QString &text);
    void applySide(const CompareSide &side); // A becomes `side`, through the setters above

    LiveSession *m_session = nullptr;

    // Where the table and the weight files came from, for captureSession().
    TableKind m_tableKind = TableKind::Unsaved;
    QString m_tablePath, m_tableName;
    QString m_projectionsPath, m_stackWeightsPath;
    QString m_sessionPath;       // "" = untitled
    bool m_saveAsks = false;     // opened with problems: Save asks for a name instead of overwriting it
    bool m_forcedModified = false; // restored with unsaved changes
    bool m_discarded = false;    // the user chose Discard while closing
    SessionState m_clean;        // as last saved / opened / started
    SavePrompt m_savePrompt;
    PathPrompt m_saveAsPrompt, m_openPrompt;
    QMenu *m_recentMenu = nullptr;

    QString m_backendMode = QStringLiteral("cpu"); // cpu, gpu, auto: what m_session computes with
    ControlPanel *m_controls = nullptr;
    HeatmapView *m_heatmap = nullptr;
    HeadGridView *m_grid = nullptr;
    EmbeddingView *m_embeddings = nullptr;
    RowView *m_row = nullptr;
    LayerGridView *m_layerGrid = nullptr;
    ResidualView *m_residual = nullptr;
    PipelineView *m_pipeline = nullptr;
    CompareView *m_compare = nullptr;
    LinesView *m_lines = nullptr;
    SentenceEdit *m_queryEdit = nullptr, *m_keyEdit = nullptr;
    TokenChipsView *m_queryChips = nullptr, *m_keyChips = nullptr;
    QTabWidget *m_tabs = nullptr;
    QLabel *m_status = nullptr, *m_notice = nullptr;
    QProgressBar *m_progress = nullptr;
    bool m_loading = false;
    LessonPanel *m_lesson = nullptr;
    bool m_applyingPreset = false;
    bool m_presenting = false;
    bool m_docksSized = false;
    struct {
        Appearance appearance;
        QByteArray state;
        QRect geometry;
        bool maximized = false;
        QPointer<QWidget> focus; // the widget that had the focus
    } m_beforePresentation;
    QAction *m_presentationAction = nullptr;
    std::vector<QShortcut *> m_presentationKeys;
    std::vector<QActionGroup *> m_appearanceGroups;
};

} // namespace attnviz::ui
