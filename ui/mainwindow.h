// SPDX-License-Identifier: GPL-3.0-or-later
// The main window only assembles: editors and token chips on top, the views as tabs, the
// controls and the selected-query bar chart as docks, the status bar, the menus. The state lives in
// LiveSession (live/); each view is its own class (views/), made and fed through the view registry
// (views/viewregistry.h, window/viewrouter.h); session files (files/sessionfiles.h), presentation
// mode and the export actions (window/) are classes of their own that it forwards to. Its member
// functions live by job in window/: windowmenus.cpp, windowmodels.cpp, windowlessons.cpp,
// windowedits.cpp, windowstatus.cpp.
#pragma once

#include "style/appearance.h"
#include "files/figureexport.h"
#include "live/livetypes.h"
#include "files/session.h"
#include "files/sessionfiles.h"

#include <QHash>
#include <QMainWindow>

#include <functional>
#include <memory>
#include <vector>

class QAction;
class QActionGroup;
class QLabel;
class QMenu;
class QShortcut;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QUndoStack;

namespace attnviz::ui {

class CompareView;
struct CompareSide;
struct ComparisonSpec;
class ControlPanel;
class EmbeddingView;
class ExportActions;
class GenerationPanel;
class GuideDialog;
class HeadAblations;
class PresentationMode;
class WindowState;
class HeadGridView;
class HeadRolesView;
class CorpusScores;
class NeedleProbes;
class HeatmapView;
class InputPanel;
class LayerGridView;
class LessonPanel;
class LinesView;
class ResidualView;
class LiveSession;
class ModelLoader;
class ModelMenu;
class PatchingView;
class AlignmentView;
class PipelineView;
class PredictionsView;
class RolloutView;
class RowView;
class SentenceEdit;
class TokenChipsView;
class ViewRouter;
struct ViewScope;

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
    // Shows the tab of a view by its stable id (views/viewregistry.h: "weights", "pipeline" …); the
    // view widget's object name is the id + "View".
    bool showView(const QString &id);
    QString currentViewId() const;
    // The tab of a view id; the weights view for an unknown id.
    QWidget *viewWidget(const QString &id) const;
    LessonPanel *lessonPanel() const { return m_lesson; }
    // Full screen, large text, high contrast, only the Lesson dock; Right/Left/Space/PageUp/PageDown
    // step through the stages, Esc leaves and restores the docks and the appearance (PresentationMode).
    void setPresentationMode(bool on);
    bool presentationMode() const;
    void presentationStep(int delta);
    void setSentence(const QString &text);
    void setKeySentence(const QString &text);
    // Sets A (the window: sentence, settings, table) and B (the Compare tab), then shows that tab.
    void startComparison(const ComparisonSpec &spec);

    // Models (File ▸ Open model…, the Model menu, `--model`, a folder dropped on the window). A
    // source is "" (the word-vector attention of the seed notebooks, the default), "bundled" (the
    // trained attnviz-tiny installed with attnviz) or a model folder. Every view then shows the
    // model's layers and heads; the word-vector controls that do not apply are disabled.
    // openModel reads it now; on failure the model in use keeps working and `error` is the core's
    // message (the file and the tensor or field).
    bool openModel(const QString &source, QString *error);
    // Reads it on a thread behind a progress dialog (Cancel keeps the model in use); a failure is
    // one message (messagePrompt) and the status bar.
    void startOpenModel(const QString &source);
    void askModelFolder(); // File ▸ Open model…: a folder dialog (folderPrompt)
    void useWordVectors();
    // A model made in code (benchmarks): `source` names it in the menu and the status bar.
    void setModel(const QString &source, std::shared_ptr<Model> model) { setModelFrom(source, std::move(model)); }
    QString modelSource() const { return m_modelSource; }
    const ModelInfo &modelInfo() const { return m_modelInfo; } // of the model in use; empty for word vectors
    ModelLoader *modelLoader() const { return m_modelLoader; }
    using MessagePrompt = std::function<void(const QString &title, const QString &text)>;
    using FolderPrompt = std::function<QString()>;
    void setMessagePrompt(MessagePrompt p) { m_messagePrompt = std::move(p); }
    void setFolderPrompt(FolderPrompt p) { m_folderPrompt = std::move(p); }

    LiveSession *session() const { return m_session; }
    ControlPanel *controls() const { return m_controls; }
    ViewRouter *views() const { return m_views; } // every view of the registry, by id
    GenerationPanel *generationPanel() const { return m_generation; }
    HeatmapView *heatmapView() const;
    HeadGridView *headGridView() const;
    EmbeddingView *embeddingView() const;
    RowView *rowView() const;
    LayerGridView *layerGridView() const;
    ResidualView *residualView() const;
    PipelineView *pipelineView() const;
    CompareView *compareView() const;
    PatchingView *patchingView() const;
    AlignmentView *alignmentView() const;
    LinesView *linesView() const;
    HeadRolesView *headRolesView() const;
    CorpusScores *corpusScores() const { return m_corpusScores; } // the Layers tab's "Over a corpus…"
    NeedleProbes *needleProbes() const { return m_needleProbes; }  // the Layers tab's "Needle probe…"
    RolloutView *rolloutView() const;
    PredictionsView *predictionsView() const;
    SentenceEdit *sentenceEdit() const { return m_queryEdit; }
    SentenceEdit *keySentenceEdit() const { return m_keyEdit; }
    TokenChipsView *queryChips() const { return m_queryChips; }
    TokenChipsView *keyChips() const { return m_keyChips; }
    InputPanel *inputPanel() const { return m_input; } // the sentence, key/value sentence and target editors
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
    QString sessionPath() const;
    QStringList recentSessions() const;
    static constexpr int kMaxRecent = SessionFiles::kMaxRecent;

    // What the window asks; replaceable so tests can answer.
    using SaveAnswer = SessionFiles::SaveAnswer;
    using SavePrompt = SessionFiles::SavePrompt;
    using PathPrompt = SessionFiles::PathPrompt;
    void setSavePrompt(SavePrompt p);
    void setSaveAsPrompt(PathPrompt p);
    void setOpenPrompt(PathPrompt p);
    // The File menu's verbs: each asks about unsaved changes first and returns false when cancelled.
    bool newSession();
    bool openSessionInteractive(const QString &path = QString()); // "" = ask for a file
    bool saveInteractive(bool saveAs);

    // Edit ▸ Undo / Redo (Ctrl+Z, Ctrl+Shift+Z): control changes, chip clicks (padding) and BERT's
    // [MASK] replacements, one step each (a slider dragged is one step). A sentence editor with the
    // focus undoes its own typing first, as every text editor does.
    QUndoStack *undoStack() const { return m_undo; }
    // Head ablation (Edit menu, the Layers × heads grid's menu, View ▸ Clean model): window/headablations.h.
    HeadAblations *ablations() const { return m_ablations; }
    // The Patching tab's requests: the window's text becomes `corrupted` and `edit` replaces any
    // earlier patch (an edit of kind Value) among the edits; clearPatch takes the patch out and
    // gives back `clean`. One undo step each, covering the text and the edits together.
    void applyPatch(const Intervention &edit, const QString &corrupted, const QString &what);
    void clearPatch(const QString &clean);

    // Help ▸ attnviz guide (F1): the user guide (resources/guide/guide.md), opened at the heading
    // `section` starts with ("" = the top). The dialog, once made (null before).
    void showGuide(const QString &section = QString());
    GuideDialog *guideDialog() const { return m_guide; }
    // Next lesson (1, Alt+Right) / Previous lesson (-1, Alt+Left) from the one in the Lesson column;
    // false past either end.
    bool stepLesson(int delta);
    // The Lesson column with the welcome (what attnviz is, where the lessons are). On the first start
    // (nothing in the settings yet) `attnviz` shows it; welcomeOnFirstStart says whether it did.
    void showWelcome();
    bool welcomeOnFirstStart();
    // File ▸ Export lesson as slides…: the lesson in the Lesson column, asked for a folder.
    void exportLessonSlides();
    using DirPrompt = std::function<QString()>;
    void setSlidesFolderPrompt(DirPrompt p) { m_slidesPrompt = std::move(p); }

signals:
    // After a snapshot reached every view (their replots are queued).
    void viewsUpdated(quint64 generation);
    void presentationModeChanged(bool on);

protected:
    void closeEvent(QCloseEvent *e) override;
    void showEvent(QShowEvent *e) override;
    void resizeEvent(QResizeEvent *e) override;
    void dragEnterEvent(QDragEnterEvent *e) override; // a model folder (or its config.json)
    void dropEvent(QDropEvent *e) override;

private:
    void buildMenus();
    void buildViewMenu();
    void fitRowDock(); // a short window's Selected query dock gives the current view its height
    void fitControlsWidth(); // the Controls dock as wide as its widest row, after a font or model change
    void onAppearanceChanged();
    void onSnapshot(SnapshotPtr s);
    void onSelection(int head, int query);
    void onSettingsChanged(const ComputeSettings &s); // recorded for undo, then computed with
    void showSnapshotStatus(const ComputeSnapshot &s, int layer); // the chips, the status bar, the notice
    ViewScope viewScope(bool stack) const; // what the window computes with, for the views' listing
    void onTokenClicked(bool keyChips, int index);
    void updateModified();
    void applySide(const CompareSide &side); // A becomes `side`, through the setters above
    // Lessons colour weights on the fixed 0–1 scale or from 0 to the largest (Preset::fixedScale); the
    // seed comparisons on the fixed one.
    void useLessonWeightScale(bool fixed = true);
    void setModelFrom(const QString &source, std::shared_ptr<Model> model); // null = word vectors
    void modelFailed(const QString &source, const QString &message);

    LiveSession *m_session = nullptr;

    WindowState *m_state = nullptr; // what a session holds: table, weight files, controls, view
    SessionFiles *m_files = nullptr;
    PresentationMode *m_presentation = nullptr;
    ExportActions *m_export = nullptr;

    QString m_backendMode = QStringLiteral("cpu"); // cpu, gpu, auto: what m_session computes with
    ControlPanel *m_controls = nullptr;
    // The Controls dock's and its scroll area's widths before larger text (or a model's rows) widened
    // them: given back once the rows fit that scroll width again (0: not widened)
    int m_controlsDockBefore = 0, m_controlsScrollBefore = 0;
    ViewRouter *m_views = nullptr; // the registry's views: tabs, and the row and predictions docks
    SentenceEdit *m_queryEdit = nullptr, *m_keyEdit = nullptr;
    TokenChipsView *m_queryChips = nullptr, *m_keyChips = nullptr;
    InputPanel *m_input = nullptr;
    GenerationPanel *m_generation = nullptr; // under the text: causal models only
    QTabWidget *m_tabs = nullptr;
    QLabel *m_status = nullptr, *m_notice = nullptr;
    QProgressBar *m_progress = nullptr;
    QPushButton *m_cancelCompute = nullptr;
    CorpusScores *m_corpusScores = nullptr;
    NeedleProbes *m_needleProbes = nullptr;
    LessonPanel *m_lesson = nullptr;
    ModelLoader *m_modelLoader = nullptr;
    ModelMenu *m_modelMenu = nullptr;
    QString m_modelSource; // "" word vectors, "bundled", or a folder
    ModelInfo m_modelInfo; // of the model in use (read once: the compute thread owns the model)
    MessagePrompt m_messagePrompt;
    FolderPrompt m_folderPrompt;
    bool m_applyingPreset = false;
    QString m_lessonFocus; // the preset whose stage and cell the pipeline shows once its result is in
    QString m_lessonZoom; // the preset whose region the heatmap zooms to once its text has its result
    bool m_docksSized = false;
    QUndoStack *m_undo = nullptr;
    HeadAblations *m_ablations = nullptr;
    ComputeSettings m_lastSettings; // what the controls set before the change being recorded
    bool m_undoing = false;         // an undo or redo is setting the controls: nothing to record
    GuideDialog *m_guide = nullptr;
    DirPrompt m_slidesPrompt;
    void buildHelpMenu();
    // Replaces characters [from, to) of the sentence through the editor's cursor (its own undo keeps
    // the edit) and records it on the window's undo stack as `what`.
    void replaceInSentence(int from, int to, const QString &with, const QString &what);
    QHash<int, QString> m_maskedWords; // BERT: the word a [MASK] at this character replaced
};

} // namespace attnviz::ui
