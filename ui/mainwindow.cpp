// SPDX-License-Identifier: GPL-3.0-or-later
#include "mainwindow.h"

#include "controls/controlpanel.h"
#include "controls/inputpanel.h"
#include "controls/sentenceedit.h"
#include "controls/stackcontrols.h"
#include "controls/tokenchipsview.h"
#include "files/messagetext.h"
#include "files/sessionfiles.h"
#include "live/fallbackbackend.h"
#include "live/livecompute.h"
#include "live/livesession.h"
#include "style/appearance.h"
#include "style/appearancemenu.h"
#include "teaching/comparison.h"
#include "teaching/lessonpanel.h"
#include "teaching/presets.h"
#include "teaching/seedtables.h"
#include "views/compareview.h"
#include "views/embeddingview.h"
#include "views/headgridview.h"
#include "views/headrolesview.h"
#include "views/heatmapview.h"
#include "views/layergridview.h"
#include "views/linesview.h"
#include "views/pipelineview.h"
#include "views/predictionsview.h"
#include "views/residualview.h"
#include "views/rolloutview.h"
#include "views/rowview.h"
#include "window/exportactions.h"
#include "window/guidedialog.h"
#include "window/modelloader.h"
#include "window/modelmenu.h"
#include "window/lessonfocus.h"
#include "window/lessonslides.h"
#include "window/presentationmode.h"
#include "window/undocommands.h"
#include "window/windowstate.h"

#include "bundledmodel.h"
#include "bundledvectors.h"

#include "attnviz/gguf.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QMimeData>
#include <QUrl>
#include <QLabel>
#include <QMenuBar>
#include <QProgressBar>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextCursor>
#include <QTextDocument>
#include <QTimer>
#include <QUndoStack>

#include <algorithm>

namespace attnviz::ui {

namespace {
const QSize kTabsMinimum(480, 220); // the views' area outside presentation mode

// The controls a settings change touched, as the Controls dock names them ("Temperature"), for the
// undo step's text and for merging a slider's drag into one step.
QString changedControls(const ComputeSettings &a, const ComputeSettings &b)
{
    QStringList names;
    const auto add = [&names](bool changed, const char *name) {
        if (changed)
            names << MainWindow::tr(name);
    };
    add(a.numHeads != b.numHeads, "Number of heads");
    add(a.dHead != b.dHead, "d_head");
    add(a.scaleRule != b.scaleRule, "Scaling");
    add(a.temperature != b.temperature, "Temperature");
    add(a.normalization != b.normalization, "Normalization");
    add(a.mask != b.mask, "Mask");
    add(a.maskMethod != b.maskMethod, "Mask method");
    add(a.projection != b.projection || a.loadedProjections != b.loadedProjections, "Projections");
    add(a.projectionSeed != b.projectionSeed, "Random seed");
    add(a.initScheme != b.initScheme, "Init");
    add(a.drawOrder != b.drawOrder, "Draw order");
    add(a.outWidth != b.outWidth, "W_o");
    add(a.dropout != b.dropout, "Dropout");
    add(a.dropoutSeed != b.dropoutSeed, "Dropout seed");
    add(a.backend != b.backend, "Backend");
    add(!(a.stack == b.stack), "Stack");
    return names.isEmpty() ? MainWindow::tr("controls") : names.join(QStringLiteral(", "));
}

} // namespace

MainWindow::MainWindow(QWidget *parent)
    : QMainWindow(parent)
    , m_session(new LiveSession(this))
{
    m_state = new WindowState(this);
    connect(m_state, &WindowState::changed, this, &MainWindow::updateModified);
    m_modelLoader = new ModelLoader(this);
    connect(m_modelLoader, &ModelLoader::loaded, this, &MainWindow::setModelFrom);
    connect(m_modelLoader, &ModelLoader::failed, this, &MainWindow::modelFailed);
    m_messagePrompt = [this](const QString &title, const QString &text) {
        auto *box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
        box->setTextFormat(Qt::PlainText); // text from files is never markup
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open(); // non-modal to the event loop: the window keeps computing behind it
    };
    m_folderPrompt = [this] {
        QSettings settings;
        const QString dir = QFileDialog::getExistingDirectory(
            this, tr("Open model folder (config.json, model.safetensors, tokenizer files)"),
            settings.value(QStringLiteral("models/lastDir")).toString());
        if (!dir.isEmpty())
            settings.setValue(QStringLiteral("models/lastDir"), QFileInfo(dir).absolutePath());
        return dir;
    };
    setAcceptDrops(true);
    m_files = new SessionFiles(
        this, [this] { return captureSession(); },
        [this](const SessionState &st, QStringList *problems) { applySession(st, problems); });

    // Input: sentence, key/value sentence, token chips.
    auto *input = m_input = new InputPanel(this);
    m_queryEdit = input->sentenceEdit();
    m_keyEdit = input->keySentenceEdit();
    m_queryChips = input->queryChips();
    m_keyChips = input->keyChips();
    m_notice = input->notice();
    connect(input, &InputPanel::sentenceChanged, m_session, &LiveSession::setSentence);
    connect(input, &InputPanel::keySentenceChanged, m_session, &LiveSession::setKeySentence);

    // Views.
    m_heatmap = new HeatmapView(this);
    m_grid = new HeadGridView(this);
    m_embeddings = new EmbeddingView(this);
    m_row = new RowView(this);
    m_heatmap->setObjectName(QStringLiteral("weightsView")); // stable view ids: presets and sessions name tabs by them
    m_grid->setObjectName(QStringLiteral("gridView"));
    m_embeddings->setObjectName(QStringLiteral("embeddingsView"));
    m_row->setObjectName(QStringLiteral("rowView"));
    m_tabs = new QTabWidget(this);
    // the views' own minimums (Compare's 656 px, Residual's 270 px) held the window at 1290 × 739 on
    // a 1280 × 720 projector: each view lays out in less (labels thin, plots scroll). Presenting
    // (no docks but the lesson's) the views' own minimums apply again.
    m_tabs->setMinimumSize(kTabsMinimum);
    m_tabs->addTab(m_heatmap, tr("Weights"));
    m_tabs->addTab(m_grid, tr("All heads"));
    // short tab names: with a model's tabs they all fit beside the docks at 1400 px (the views' own
    // titles give the long names)
    m_tabs->addTab(m_embeddings, tr("Embeddings"));
    m_tabs->setTabToolTip(m_tabs->indexOf(m_embeddings), tr("Contextual embeddings"));
    m_lines = new LinesView(this);
    m_lines->setObjectName(QStringLiteral("linesView"));
    m_tabs->addTab(m_lines, tr("Lines"));
    m_pipeline = new PipelineView(this);
    m_pipeline->setObjectName(QStringLiteral("pipelineView"));
    m_tabs->addTab(m_pipeline, tr("Pipeline"));
    m_layerGrid = new LayerGridView(this); // stack mode (depth >= 2) only
    m_residual = new ResidualView(this);
    m_layerGrid->setObjectName(QStringLiteral("layersView"));
    m_residual->setObjectName(QStringLiteral("residualView"));
    m_tabs->addTab(m_layerGrid, tr("Layers"));
    m_tabs->setTabToolTip(m_tabs->indexOf(m_layerGrid), tr("Layers × heads"));
    m_tabs->addTab(m_residual, tr("Residual"));
    m_tabs->setTabToolTip(m_tabs->indexOf(m_residual), tr("Residual stream"));
    showTab(m_layerGrid, false);
    showTab(m_residual, false);
    m_roles = new HeadRolesView(this); // a model's heads (a model folder) only
    m_roles->setObjectName(QStringLiteral("headRolesView"));
    m_tabs->addTab(m_roles, tr("Layers"));
    m_tabs->setTabToolTip(m_tabs->indexOf(m_roles), tr("Layers × heads, with each head's role"));
    showTab(m_roles, false);
    m_rollout = new RolloutView(this); // several layers only
    m_rollout->setObjectName(QStringLiteral("rolloutView"));
    m_tabs->addTab(m_rollout, tr("Rollout"));
    showTab(m_rollout, false);
    m_compare = new CompareView(m_session, this);
    m_compare->setObjectName(QStringLiteral("compareView"));
    m_tabs->addTab(m_compare, tr("Compare"));

    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(input);
    split->addWidget(m_tabs);
    split->setStretchFactor(0, 0);
    split->setStretchFactor(1, 1);
    split->setChildrenCollapsible(false);
    setCentralWidget(split);

    m_controls = new ControlPanel(this);
    auto *controlsScroll = new QScrollArea(this);
    controlsScroll->setWidget(m_controls);
    controlsScroll->setWidgetResizable(true);
    controlsScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    controlsScroll->setMinimumWidth(m_controls->sizeHint().width() + controlsScroll->verticalScrollBar()->sizeHint().width() + 4);
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    auto *controlsDock = new QDockWidget(tr("Controls"), this);
    controlsDock->setObjectName(QStringLiteral("controlsDock"));
    controlsDock->setWidget(controlsScroll);
    addDockWidget(Qt::LeftDockWidgetArea, controlsDock);
    auto *rowDock = new QDockWidget(tr("Selected query"), this);
    rowDock->setObjectName(QStringLiteral("rowDock"));
    rowDock->setWidget(m_row);
    addDockWidget(Qt::BottomDockWidgetArea, rowDock);
    resizeDocks({rowDock}, {230}, Qt::Vertical);
    m_lesson = new LessonPanel(this);
    auto *lessonDock = new QDockWidget(tr("Lesson"), this);
    lessonDock->setObjectName(QStringLiteral("lessonDock"));
    lessonDock->setWidget(m_lesson);
    addDockWidget(Qt::RightDockWidgetArea, lessonDock);
    lessonDock->hide(); // shown by a preset, or from the View menu
    m_predictions = new PredictionsView(this);
    auto *predictionsDock = new QDockWidget(tr("Predictions"), this);
    predictionsDock->setObjectName(QStringLiteral("predictionsDock"));
    predictionsDock->setWidget(m_predictions);
    addDockWidget(Qt::RightDockWidgetArea, predictionsDock);
    predictionsDock->hide(); // shown while the model has an LM / MLM head
    connect(m_lesson, &LessonPanel::presetChosen, this, [this](const QString &id) { applyPreset(id); });
    connect(m_lesson, &LessonPanel::stepRequested, this, &MainWindow::stepLesson);
    // The Compare tab shows both sides' rows itself, and the Pipeline explains any cell of the row: they
    // take the row dock's height while they are shown.
    connect(m_tabs, &QTabWidget::currentChanged, this, [this, rowDock] {
        const bool compare = m_tabs->currentWidget() == m_compare || m_tabs->currentWidget() == m_pipeline;
        if (compare && !rowDock->isHidden()) { // isHidden: also before the window is shown
            rowDock->hide();
            rowDock->setProperty("hiddenForCompare", true);
        } else if (!compare && rowDock->property("hiddenForCompare").toBool()) {
            rowDock->show();
            rowDock->setProperty("hiddenForCompare", false);
        }
    });

    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("statusLabel"));
    m_status->setTextFormat(Qt::PlainText); // names from files are never markup
    m_status->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred); // cut, never wider than the screen
    statusBar()->addWidget(m_status, 1);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 0);
    m_progress->setMaximumWidth(160);
    m_progress->setVisible(false);
    statusBar()->addPermanentWidget(m_progress);

    // Wiring.
    connect(m_session, &LiveSession::snapshotChanged, this, &MainWindow::onSnapshot);
    connect(m_session, &LiveSession::selectionChanged, this, &MainWindow::onSelection);
    // another layer of the same trace: every view, the chips and the status bar show it
    connect(m_session, &LiveSession::layerChanged, this, [this] { onSnapshot(m_session->snapshot()); });
    connect(m_session, &LiveSession::headDisplayChanged, this, [this](HeadDisplay d) {
        m_controls->setHeadDisplay(d);
        m_heatmap->setHeadDisplay(d);
        m_row->setHeadDisplay(d);
        m_lines->setHeadDisplay(d);
        if (d == HeadDisplay::All && m_tabs->currentWidget() != m_lines) // the lines view overlays them
            m_tabs->setCurrentWidget(m_grid);
        else if (m_tabs->currentWidget() == m_grid)
            m_tabs->setCurrentWidget(m_heatmap);
    });
    connect(m_session, &LiveSession::busyChanged, this, [this](bool busy, int) {
        m_progress->setVisible(busy);
        if (busy)
            m_status->setText(tr("Computing…"));
    });
    m_undo = new QUndoStack(this);
    connect(m_controls, &ControlPanel::settingsChanged, this, [this](const ComputeSettings &s) {
        // one undo step per change made by hand (a preset, a session or an undo sets them too)
        if (!m_undoing && !m_applyingPreset && s != m_lastSettings) {
            const ComputeSettings before = m_lastSettings, after = s;
            const QString what = changedControls(before, after);
            const auto set = [this](const ComputeSettings &to) {
                m_undoing = true;
                m_controls->setSettings(to);
                m_undoing = false;
            };
            m_undo->push(new WindowCommand(tr("Change %1").arg(what), [set, before] { set(before); },
                                           [set, after] { set(after); }, what));
        }
        m_lastSettings = s;
        if (s.backend != m_backendMode) { // made here, on the GUI thread, as a QRhi needs
            m_backendMode = s.backend;
            m_session->setBackend(makeWindowBackend(s.backend.toStdString()));
        }
        m_session->setSettings(s);
        if (!m_applyingPreset) {
            m_lesson->markEdited();
            m_lessonFocus.clear();
        }
        m_heatmap->setCustomMaskEditing(s.mask == MaskChoice::Custom);
        // the Layers and Residual tabs: shown for a trace of several layers (onSnapshot); here ahead
        // of it, so that a session or --tab can name them before the first result
        const bool deep = m_session->model() ? m_modelInfo.layers > 1 : s.stack.enabled();
        showTab(m_layerGrid, deep);
        showTab(m_residual, deep);
        updateModified();
    });
    connect(m_controls, &ControlPanel::headDisplayChanged, m_session, &LiveSession::setHeadDisplay);
    connect(m_controls, &ControlPanel::headChanged, m_session, &LiveSession::setSelectedHead);
    connect(m_controls, &ControlPanel::showNumbersChanged, m_heatmap, &HeatmapView::setShowNumbers);
    m_heatmap->setShowNumbers(m_controls->showNumbers());
    connect(m_controls, &ControlPanel::clearCustomMaskRequested, m_session, &LiveSession::clearCustomMask);
    connect(m_controls, &ControlPanel::loadEmbeddingsRequested, m_state, &WindowState::startLoadEmbeddings);
    connect(m_controls, &ControlPanel::useBundledRequested, m_state, &WindowState::useBundled);
    connect(m_controls, &ControlPanel::loadProjectionsRequested, m_state, &WindowState::askProjectionsFile);
    connect(m_heatmap, &HeatmapView::querySelected, m_session, &LiveSession::setSelectedQuery);
    connect(m_heatmap, &HeatmapView::querySelected, m_predictions, &PredictionsView::setSelectedPosition);
    connect(m_heatmap, &HeatmapView::cellToggled, m_session, &LiveSession::toggleCustomCell);
    connect(m_embeddings, &EmbeddingView::querySelected, m_session, &LiveSession::setSelectedQuery);
    connect(m_grid, &HeadGridView::headSelected, this, [this](int head) {
        m_session->setSelectedHead(head);
        if (m_session->headDisplay() == HeadDisplay::All)
            m_session->setHeadDisplay(head < 0 ? HeadDisplay::Average : HeadDisplay::One);
        m_tabs->setCurrentWidget(m_heatmap);
    });
    const auto openHead = [this](int layer, int head) { // a thumbnail of the stack's or a model's grid
        m_session->setSelectedLayer(layer);
        m_session->setSelectedHead(head);
        if (m_session->headDisplay() == HeadDisplay::All)
            m_session->setHeadDisplay(HeadDisplay::One);
        m_tabs->setCurrentWidget(m_heatmap);
    };
    connect(m_layerGrid, &LayerGridView::thumbnailSelected, this, openHead);
    connect(m_roles, &HeadRolesView::headSelected, this, openHead);
    connect(m_queryChips, &TokenChipsView::tokenHovered, m_predictions, &PredictionsView::setHoveredPosition);
    connect(m_heatmap, &HeatmapView::queryHovered, m_predictions, &PredictionsView::setHoveredPosition);
    connect(m_lines, &LinesView::querySelected, m_session, &LiveSession::setSelectedQuery);
    connect(m_lines, &LinesView::headSelected, m_session, &LiveSession::setSelectedHead);
    connect(m_lines, &LinesView::headDisplayRequested, m_session, &LiveSession::setHeadDisplay);
    connect(m_lines, &LinesView::optionsChanged, this, &MainWindow::updateModified);
    connect(m_residual, &ResidualView::querySelected, m_session, &LiveSession::setSelectedQuery);
    connect(m_controls->stackControls(), &StackControls::layerChanged, m_session, &LiveSession::setSelectedLayer);
    connect(m_controls, &ControlPanel::layerChanged, m_session, &LiveSession::setSelectedLayer);
    connect(m_controls, &ControlPanel::layerChanged, this, &MainWindow::updateModified);
    connect(m_controls->stackControls(), &StackControls::loadWeightsRequested, m_state,
            &WindowState::askStackWeightsFile);
    connect(m_compare, &CompareView::comparisonRequested, this, &MainWindow::startComparison);
    connect(m_compare, &CompareView::sideARequested, this, &MainWindow::applySide);
    connect(m_queryChips, &TokenChipsView::tokenClicked, this, [this](int i) { onTokenClicked(false, i); });
    connect(m_keyChips, &TokenChipsView::tokenClicked, this, [this](int i) { onTokenClicked(true, i); });

    // Unsaved changes: whatever a session holds, compared with the state last saved or opened.
    for (SentenceEdit *e : {m_queryEdit, m_keyEdit})
        connect(e, &QPlainTextEdit::textChanged, this, &MainWindow::updateModified);
    connect(m_session, &LiveSession::selectionChanged, this, &MainWindow::updateModified);
    connect(m_session, &LiveSession::headDisplayChanged, this, &MainWindow::updateModified);
    connect(m_heatmap, &HeatmapView::cellToggled, this, &MainWindow::updateModified);
    connect(m_controls, &ControlPanel::clearCustomMaskRequested, this, &MainWindow::updateModified);
    connect(m_controls, &ControlPanel::showNumbersChanged, this, &MainWindow::updateModified);
    connect(m_controls->stackControls(), &StackControls::layerChanged, this, &MainWindow::updateModified);
    connect(m_tabs, &QTabWidget::currentChanged, this, &MainWindow::updateModified);

    m_presentation = new PresentationMode(this, m_tabs, m_pipeline, m_lesson);
    connect(m_presentation, &PresentationMode::changed, this, &MainWindow::presentationModeChanged);
    connect(m_presentation, &PresentationMode::changed, this,
            [this](bool on) { m_tabs->setMinimumSize(on ? QSize(0, 0) : kTabsMinimum); });
    m_export = new ExportActions(this);
    buildMenus();
    for (QCustomPlot *p : findChildren<QCustomPlot *>())
        AppearanceManager::track(p);
    connect(AppearanceManager::instance(), &AppearanceManager::changed, this, &MainWindow::onAppearanceChanged);

    // The bundled table, when this build has it.
    m_controls->setBundledAvailable(hasBundledEmbeddings(),
                                    tr("This build has no bundled word vectors; load a table instead."));
    if (hasBundledEmbeddings()) {
        m_state->useBundled();
    } else {
        m_controls->setTableDescription(
            tr("No bundled vectors in this build. Load a GloVe / word2vec / fastText / .avec table."));
    }
    m_session->setSettings(m_controls->settings());
    m_session->setSentence(QString());
    m_queryEdit->setPlainText(defaultSentence());
    m_lastSettings = m_controls->settings();
    m_undo->clear(); // the start is not a change

    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    if (!settings.contains(QStringLiteral("window/geometry"))) {
        // 1400 × 900, or the screen's free area where that is smaller (a 1280 × 720 projector)
        const QRect free = screen() ? screen()->availableGeometry() : QRect(0, 0, 1400, 900);
        resize(std::min(1400, free.width()), std::min(900, free.height()));
    }
    m_files->markClean();
}

MainWindow::~MainWindow() = default;

void MainWindow::showEvent(QShowEvent *e)
{
    QMainWindow::showEvent(e);
    if (!m_docksSized) { // docks take their sizes once the window has its own
        m_docksSized = true;
        QTimer::singleShot(0, this, [this] {
            if (auto *lesson = findChild<QDockWidget *>(QStringLiteral("lessonDock")))
                resizeDocks({lesson}, {std::max(260, width() / 5)}, Qt::Horizontal);
        });
    }
}

void MainWindow::closeEvent(QCloseEvent *e)
{
    if (!m_files->close()) {
        e->ignore();
        return;
    }
    QMainWindow::closeEvent(e);
}

void MainWindow::buildMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    m_files->addFileActions(file);
    file->addSeparator();
    m_modelMenu = new ModelMenu(this, m_modelLoader, new QMenu(tr("&Model"), this), file);
    file->addAction(tr("Load &embeddings…"), m_state, &WindowState::startLoadEmbeddings);
    file->addAction(tr("Load &projections…"), m_state, &WindowState::askProjectionsFile);
    file->addSeparator();
    file->addAction(tr("Export current &view…"), QKeySequence(tr("Ctrl+E")), m_export, &ExportActions::exportCurrent);
    file->addAction(tr("Export &all heads…"), this, [this] { m_export->exportFigure(ExportView::Grid); });
    file->addAction(tr("Export &matrices (CSV, NPY, JSON)…"), m_export, &ExportActions::exportMatrices);
    file->addAction(tr("Export lesson as &slides (PNG, PDF)…"), this, &MainWindow::exportLessonSlides);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    QAction *undo = m_undo->createUndoAction(this, tr("&Undo"));
    undo->setObjectName(QStringLiteral("undoAction"));
    undo->setShortcut(QKeySequence(tr("Ctrl+Z")));
    QAction *redo = m_undo->createRedoAction(this, tr("&Redo"));
    redo->setObjectName(QStringLiteral("redoAction"));
    redo->setShortcuts({QKeySequence(tr("Ctrl+Shift+Z")), QKeySequence(tr("Ctrl+Y"))});
    edit->addAction(undo);
    edit->addAction(redo);

    menuBar()->addMenu(m_modelMenu->menu());
    buildViewMenu();
    QMenu *presetMenu = menuBar()->addMenu(tr("&Presets"));
    QAction *next = presetMenu->addAction(tr("&Next lesson"), QKeySequence(tr("Alt+Right")), this, [this] { stepLesson(1); });
    next->setObjectName(QStringLiteral("nextLessonAction"));
    QAction *previous = presetMenu->addAction(tr("&Previous lesson"), QKeySequence(tr("Alt+Left")), this, [this] { stepLesson(-1); });
    previous->setObjectName(QStringLiteral("previousLessonAction"));
    presetMenu->addSeparator();
    QString lastSeed;
    QMenu *sub = nullptr;
    for (const Preset &p : presets()) {
        if (p.seed != lastSeed) {
            sub = presetMenu->addMenu(seedTitle(p.seed));
            lastSeed = p.seed;
        }
        const QString id = p.id;
        sub->addAction(p.title, this, [this, id] { applyPreset(id); });
    }
    QMenu *compare = menuBar()->addMenu(tr("&Compare"));
    for (const ComparisonSpec &c : seedComparisons()) {
        const QString id = c.id;
        compare->addAction(c.title, this, [this, id] {
            ComparisonSpec spec;
            if (findSeedComparison(id, spec))
                startComparison(spec);
        });
    }
    compare->addSeparator();
    compare->addAction(tr("Show the Compare tab"), this, [this] { m_tabs->setCurrentWidget(m_compare); });
    buildHelpMenu();
}

void MainWindow::buildViewMenu()
{
    QMenu *view = menuBar()->addMenu(tr("&View"));
    new AppearanceMenu(view, this);
    view->addSeparator();
    for (auto *dock : findChildren<QDockWidget *>())
        view->addAction(dock->toggleViewAction()); // Controls, Selected query, Lesson
    view->addSeparator();
    view->addAction(m_presentation->action());
}

void MainWindow::buildHelpMenu()
{
    QMenu *help = menuBar()->addMenu(tr("&Help"));
    QAction *guide = help->addAction(tr("attnviz &guide"), QKeySequence(Qt::Key_F1), this, [this] { showGuide(); });
    guide->setObjectName(QStringLiteral("guideAction"));
    help->addAction(tr("&Keyboard shortcuts"), this, [this] { showGuide(tr("Keyboard shortcuts")); });
    help->addAction(tr("Start the &lessons"), this, [this] { applyPreset(presets().front().id); });
    help->addSeparator();
    help->addAction(tr("&About attnviz"), this, [this] {
        if (m_messagePrompt)
            m_messagePrompt(tr("About attnviz"),
                            tr("attnviz %1 shows, live, how transformer attention reads a sentence.\n\n"
                               "GPL-3.0-or-later. Help ▸ attnviz guide (F1) explains every view and key.")
                                .arg(QCoreApplication::applicationVersion()));
    });
}

void MainWindow::showGuide(const QString &section)
{
    if (!m_guide)
        m_guide = new GuideDialog(this);
    m_guide->show();
    m_guide->raise();
    m_guide->activateWindow();
    if (!section.isEmpty())
        m_guide->showSection(section);
}

void MainWindow::onAppearanceChanged()
{
    // a dock draws its title in the font Qt gave it when the dock was made (the "QDockWidgetTitle"
    // font) while the dock's font equals the application's: each dock gets the application's font
    // marked as its own (an antialiasing preference, which text has anyway), so that larger text
    // (presentation's 1.6×) reaches the titles
    for (QDockWidget *d : findChildren<QDockWidget *>()) {
        QFont own = QApplication::font();
        own.setStyleStrategy(QFont::PreferAntialias);
        d->setFont(own);
    }
    for (QCustomPlot *p : findChildren<QCustomPlot *>()) {
        AppearanceManager::track(p);
        AppearanceManager::stylePlot(p);
    }
    // the Controls keep all their text in view at any text size, once their layout has taken the
    // new font (issue 14, 6)
    QTimer::singleShot(0, this, [this] {
        auto *scroll = qobject_cast<QScrollArea *>(m_controls->parentWidget() ? m_controls->parentWidget()->parentWidget() : nullptr);
        if (!scroll)
            return;
        m_controls->layout()->activate();
        scroll->setMinimumWidth(m_controls->sizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() + 4);
    });
    if (m_session->snapshot())
        onSnapshot(m_session->snapshot()); // the views draw again with the new maps
    for (QCustomPlot *p : findChildren<QCustomPlot *>())
        p->replot(QCustomPlot::rpQueuedReplot);
}

void MainWindow::setPresentationMode(bool on)
{
    if (on)
        m_tabs->setMinimumSize(0, 0); // before the mode lays the window out
    m_presentation->setOn(on);
}
bool MainWindow::presentationMode() const { return m_presentation->isOn(); }
void MainWindow::presentationStep(int delta) { m_presentation->step(delta); }

bool MainWindow::showView(const QString &id)
{
    QWidget *w = viewWidget(id);
    const int i = m_tabs->indexOf(w);
    if (w->objectName() != id + QLatin1String("View") || !m_tabs->isTabVisible(i))
        return false;
    m_tabs->setCurrentIndex(i);
    return true;
}

QString MainWindow::currentViewId() const
{
    QString name = m_tabs->currentWidget() ? m_tabs->currentWidget()->objectName() : QString();
    return name.endsWith(QLatin1String("View")) ? name.chopped(4) : name;
}

bool MainWindow::applyPreset(const QString &id)
{
    const Preset *p = findPreset(id);
    if (!p)
        return false;
    m_applyingPreset = true;
    useLessonWeightScale();
    if (!p->model.isEmpty()) { // a lesson on a trained model: its own tokens and settings, no table
        QString error;
        if (ModelLoader::canonicalSource(p->model) != m_modelSource && !openModel(p->model, &error)) {
            m_applyingPreset = false;
            m_status->setText(tr("The preset \"%1\" needs %2: %3").arg(p->title, ModelLoader::title(p->model), shownText(error, 300)));
            return false;
        }
    } else {
        if (!m_modelSource.isEmpty())
            useWordVectors(); // the seeds' presets are lessons on the word vectors
        switch (p->table) {
        case PresetTable::Journey:
            setEmbeddingTable(journeyTable(), describeTable(*journeyTable()));
            break;
        case PresetTable::Bloem:
            setEmbeddingTable(bloemTable(), describeTable(*bloemTable()));
            break;
        case PresetTable::Bundled:
            if (!hasBundledEmbeddings()) {
                m_applyingPreset = false;
                m_status->setText(tr("The preset \"%1\" needs the bundled word vectors, which this build does not have.")
                                      .arg(p->title));
                return false;
            }
            if (!m_session->table() || m_session->table()->source() != bundledEmbeddingsName())
                m_state->useBundled();
            break;
        }
    }
    m_keyEdit->setPlainText(p->keySentence);
    m_queryEdit->setPlainText(p->sentence);
    if (p->model.isEmpty())
        m_controls->setSettings(p->settings);
    m_session->setSelectedLayer(p->layer);
    m_session->setHeadDisplay(p->display);
    if (p->display == HeadDisplay::One)
        m_session->setSelectedHead(p->head);
    m_session->setSelectedQuery(p->query);
    // A late result of the text before (a model just opened computes it first) clamps the selection
    // to its tokens: the preset's query is selected again once its own text has its result.
    const SnapshotPtr now = m_session->snapshot();
    auto once = std::make_shared<QMetaObject::Connection>();
    if (!now || now->generation != m_session->generation())
        *once = connect(m_session, &LiveSession::snapshotChanged, this,
                        [this, once, sentence = p->sentence, query = p->query](const SnapshotPtr &s) {
                            if (s->generation != m_session->generation())
                                return;
                            disconnect(*once);
                            if (s->hasResult() && s->sentence == sentence && query < s->tq())
                                m_session->setSelectedQuery(query);
                        });
    if (!showView(p->view))
        showView(SessionTab::Weights);
    // a model lesson's predictions are about its query (the last token otherwise)
    m_predictions->setSelectedPosition(p->model.isEmpty() ? -1 : p->query);
    m_lesson->showPreset(p);
    if (auto *dock = findChild<QDockWidget *>(QStringLiteral("lessonDock")))
        dock->show();
    m_heatmap->resetZoom(); // the lesson before may have zoomed
    m_lessonFocus = p->stage.isEmpty() ? QString() : p->id; // applied with the preset's result
    m_lessonZoom = p->zoom.isEmpty() ? QString() : p->id;   // the same (a model's settings may come after)
    m_applyingPreset = false;
    // a lesson starts afresh: undo does not reach into the one before
    m_lastSettings = m_controls->settings();
    m_undo->clear();
    m_maskedWords.clear();
    return true;
}

bool MainWindow::stepLesson(int delta)
{
    const QString id = LessonPanel::neighbourId(m_lesson->shownId(), delta);
    return !id.isEmpty() && applyPreset(id);
}

void MainWindow::showWelcome()
{
    m_lesson->showWelcome();
    if (auto *dock = findChild<QDockWidget *>(QStringLiteral("lessonDock")))
        dock->show();
}

bool MainWindow::welcomeOnFirstStart()
{
    QSettings settings;
    if (settings.value(QStringLiteral("lessons/welcomed")).toBool())
        return false;
    settings.setValue(QStringLiteral("lessons/welcomed"), true);
    showWelcome();
    return true;
}

void MainWindow::setSentence(const QString &text) { m_queryEdit->setPlainText(text); }

void MainWindow::setKeySentence(const QString &text) { m_keyEdit->setPlainText(text); }

void MainWindow::exportLessonSlides()
{
    const QString id = m_lesson->shownId();
    if (id.isEmpty()) {
        if (m_messagePrompt)
            m_messagePrompt(tr("Export lesson as slides"),
                            tr("Choose a lesson first: the Lesson column or the Presets menu."));
        return;
    }
    const QString dir = m_slidesPrompt ? m_slidesPrompt()
                                       : QFileDialog::getExistingDirectory(this, tr("Folder for the slides"));
    if (dir.isEmpty())
        return;
    QString error;
    const QStringList files = writeLessonSlides(*this, id, dir, SlideOptions(), &error);
    m_status->setText(files.isEmpty() ? tr("The slides were not written: %1").arg(shownText(error, 300))
                                      : tr("%1 files written to %2").arg(files.size()).arg(shownText(dir, 300)));
}

void MainWindow::applySide(const CompareSide &side)
{
    if (side.table && side.table != m_session->table())
        setEmbeddingTable(side.table, side.tableDescription.isEmpty() ? describeTable(*side.table) : side.tableDescription);
    m_controls->setSettings(side.settings);
    setKeySentence(side.keySentence);
    setSentence(side.sentence);
}

void MainWindow::useLessonWeightScale()
{
    // a lesson compares weights with each other and with 1: the fixed 0–1 colour scale (View menu)
    if (!AppearanceManager::instance()->appearance().fixedWeights) {
        Appearance a = AppearanceManager::instance()->appearance();
        a.fixedWeights = true;
        AppearanceManager::instance()->setAppearance(a);
    }
}

void MainWindow::startComparison(const ComparisonSpec &spec)
{
    if (!spec.id.isEmpty()) // one of the seeds' comparisons: a lesson
        useLessonWeightScale();
    applySide(spec.a);
    if (spec.selectedQuery >= 0)
        m_session->setSelectedQuery(spec.selectedQuery);
    m_compare->loadSpec(spec);
    m_tabs->setCurrentWidget(m_compare);
}

void MainWindow::replaceInSentence(int from, int to, const QString &with, const QString &what)
{
    const QString before = m_queryEdit->toPlainText().mid(from, to - from);
    const auto edit = [this](int a, int b, const QString &text) {
        QTextCursor c(m_queryEdit->document());
        c.setPosition(a);
        c.setPosition(b, QTextCursor::KeepAnchor);
        c.insertText(text);
    };
    edit(from, to, with);
    m_undo->push(new WindowCommand(what, [edit, from, with, before] { edit(from, from + int(with.size()), before); },
                                   [edit, from, with, before] { edit(from, from + int(before.size()), with); }));
}

void MainWindow::onTokenClicked(bool keyChips, int index)
{
    const SnapshotPtr s = m_session->snapshot();
    if (s && s->maskedLm() && !keyChips) { // BERT: the clicked token becomes [MASK], and back
        if (!s->trace || index < 0 || index >= int(s->trace->tokens.size()) || s->sentence != m_queryEdit->toPlainText())
            return; // a result of an older text: its byte ranges are not this text's
        const TraceToken &t = s->trace->tokens[size_t(index)];
        const QByteArray bytes = s->sentence.toUtf8();
        if (t.end <= t.begin || t.end > size_t(bytes.size()))
            return;
        // character positions in the editor (the trace counts UTF-8 bytes)
        const int from = int(QString::fromUtf8(bytes.left(qsizetype(t.begin))).size());
        const int to = int(QString::fromUtf8(bytes.left(qsizetype(t.end))).size());
        const QString word = s->sentence.mid(from, to - from);
        if (word == QLatin1String("[MASK]")) {
            if (const auto it = m_maskedWords.constFind(from); it != m_maskedWords.cend()) {
                const QString original = *it;
                m_maskedWords.remove(from);
                replaceInSentence(from, to, original, tr("Unmask “%1”").arg(original));
            }
            return;
        }
        if (PredictionsView::maskedSentence(*s, index).isEmpty())
            return; // an added special token
        m_maskedWords.insert(from, word);
        replaceInSentence(from, to, QStringLiteral("[MASK]"), tr("Mask “%1”").arg(word));
        return;
    }
    const bool cross = s && s->cross;
    if (keyChips != cross)
        return; // in cross-attention only the key sentence's tokens can be padding
    const ComputeSettings before = m_controls->settings();
    const auto toggle = [this, index](const ComputeSettings &st) {
        m_undoing = true;
        m_session->togglePadding(index);
        m_controls->setSettings(st);
        m_undoing = false;
        updateModified();
    };
    ComputeSettings st = before;
    if (st.mask == MaskChoice::None || st.mask == MaskChoice::Custom)
        st.mask = MaskChoice::Padding;
    else if (st.mask == MaskChoice::Causal)
        st.mask = MaskChoice::CausalPadding;
    toggle(st);
    const ComputeSettings after = m_controls->settings();
    m_undo->push(new WindowCommand(tr("Pad token %1").arg(index), [toggle, before] { toggle(before); },
                                   [toggle, after] { toggle(after); }));
}

void MainWindow::showTab(QWidget *page, bool visible)
{
    // QTabWidget::setTabVisible lays the tabs out again and repaints the whole tab widget even when
    // nothing changes: called on every snapshot, that was a full repaint of the views per keystroke
    const int index = m_tabs->indexOf(page);
    if (m_tabs->isTabVisible(index) != visible)
        m_tabs->setTabVisible(index, visible);
}

void MainWindow::onSnapshot(SnapshotPtr s)
{
    for (QCustomPlot *p : findChildren<QCustomPlot *>()) // views may make plots as they go
        AppearanceManager::track(p);
    m_heatmap->setSnapshot(s);
    m_grid->setSnapshot(s);
    m_embeddings->setSnapshot(s);
    m_lines->setSnapshot(s);
    m_row->setSnapshot(s);
    m_layerGrid->setSnapshot(s);
    m_residual->setSnapshot(s);
    m_pipeline->setSnapshot(s);
    m_roles->setSnapshot(s);
    m_rollout->setSnapshot(s);
    m_predictions->setSnapshot(s);
    if (auto *dock = findChild<QDockWidget *>(QStringLiteral("predictionsDock")); dock && dock->property("forHead").toBool() != (s->causalLm() || s->maskedLm())) {
        dock->setProperty("forHead", s->causalLm() || s->maskedLm());
        dock->setVisible(s->causalLm() || s->maskedLm());
        auto *lesson = findChild<QDockWidget *>(QStringLiteral("lessonDock"));
        if (dock->isVisible() && lesson && lesson->isVisible()) // a lesson quotes both: the column is shared
            resizeDocks({lesson, dock}, {height() * 11 / 20, height() * 9 / 20}, Qt::Vertical);
    }
    const int layer = s->layerIndex(m_session->selectedLayer());
    if (s->deep())
        m_controls->stackControls()->setShownLayer(layer);
    if (s->hasResult()) {
        m_controls->setLayerCount(s->numLayers());
        m_controls->setShownLayer(layer);
    }
    // an error keeps the tabs as they were, and so does a late result of the model (or the word
    // vectors) used before the one now open
    if ((s->hasResult() || s->sentence.trimmed().isEmpty()) && s->fromModel() == (m_session->model() != nullptr)) {
        const bool stack = !m_session->model() && s->settings.stack.enabled();
        showTab(m_layerGrid, stack || (s->deep() && !s->fromModel()));
        showTab(m_residual, s->deep() || stack);
        showTab(m_roles, s->fromModel());
        showTab(m_rollout, s->deep());
    }
    onSelection(m_session->shownHead(), m_session->selectedQuery());

    const QString tokenizer = m_session->model() ? QString::fromStdString(m_modelInfo.tokenizer) : QString();
    const TokenChipsView::Pieces pieces = tokenizer.startsWith(QLatin1String("byte-level"), Qt::CaseInsensitive)
        ? TokenChipsView::Pieces::ByteLevel
        : tokenizer.startsWith(QLatin1String("WordPiece"), Qt::CaseInsensitive) ? TokenChipsView::Pieces::WordPiece
                                                                               : TokenChipsView::Pieces::Words;
    if (s->trace)
        m_queryChips->setTraceTokens(s->trace->tokens, s->totalQueryTokens, pieces);
    else
        m_queryChips->setTokens(s->queryLabels, s->queryUnknown, s->totalQueryTokens);
    const bool padding = s->settings.mask == MaskChoice::Padding || s->settings.mask == MaskChoice::CausalPadding;
    if (s->cross) {
        m_keyChips->setTokens(s->keyLabels, s->keyUnknown, s->totalKeyTokens);
        m_keyChips->setPadded(s->paddedKeys, padding);
        m_queryChips->setPadded({}, false);
    } else {
        m_queryChips->setPadded(s->paddedKeys, padding);
    }

    if (s->hasResult()) {
        m_status->setText(tr("%1%2 · %3 · d_model %4 · d_head %5 · %6: %7 · %8 ms")
                              .arg(countText(s->tq(), tr("token"), tr("tokens")))
                              .arg(s->cross ? tr(" × %1").arg(countText(s->tk(), tr("key"), tr("keys"))) : QString())
                              .arg(countText(s->attention(layer).numHeads, tr("head"), tr("heads")))
                              .arg(s->attention(layer).dModel)
                              .arg(s->attention(layer).dHead)
                              .arg(s->backendName, s->device)
                              .arg(s->computeMs, 0, 'f', s->computeMs < 10 ? 2 : 1));
        if (s->deep())
            m_status->setText(m_status->text() + tr(" · layer %1 of %2").arg(layer).arg(s->numLayers()));
        if (m_session->model()) {
            m_status->setText(m_status->text() + tr(" · model %1").arg(shownText(s->modelLabel, 200)));
            // a quantized file: what the attention shown is (core/include/attnviz/gguf.h)
            if (const std::string note = quantizedModelNote(m_modelInfo.dtype); !note.empty())
                m_status->setText(m_status->text() + QStringLiteral(" · ") + QString::fromStdString(note));
        }
    } else {
        m_status->setText(shownText(s->message, 160));
    }
    if (m_session->model() && s->settings.backend != QLatin1String("cpu")) // never a silent switch
        m_status->setText(m_status->text() + tr(" · the GPU backend is chosen, but models run on the CPU for now"));
    if (s->hasResult() && s->trace->cut() && !s->trace->cutReason.empty())
        m_status->setText(m_status->text() + tr(" · cut at %L1 of %L2 tokens: %3")
                                                 .arg(s->tq())
                                                 .arg(s->totalQueryTokens)
                                                 .arg(QString::fromStdString(s->trace->cutReason)));
    QStringList notices;
    if (s->trace && s->trace->cut() && !s->trace->cutReason.empty())
        notices << tr("%L1 tokens: the views show the first %L2 (%3).")
                       .arg(std::max(s->totalQueryTokens, s->totalKeyTokens))
                       .arg(s->tq())
                       .arg(QString::fromStdString(s->trace->cutReason));
    else if (s->truncated())
        notices << tr("%L1 tokens pasted: the views show the first %L2 (%3).")
                       .arg(std::max(s->totalQueryTokens, s->totalKeyTokens))
                       .arg(s->tq())
                       .arg(s->cutReason());
    if (!notices.isEmpty()) {
        m_notice->setText(notices.join(QLatin1Char('\n')));
        m_notice->setVisible(true);
    } else if (!m_notice->text().contains(QChar::ReplacementCharacter)) {
        m_notice->setVisible(false);
    }
    if (!m_lessonFocus.isEmpty() && s->hasResult() && s->generation == m_session->generation()) {
        if (const Preset *p = findPreset(m_lessonFocus); p && m_tabs->currentWidget() == m_pipeline)
            applyLessonFocus(*m_pipeline, *p);

        m_lessonFocus.clear();
    }
    if (!m_lessonZoom.isEmpty() && s->hasResult() && s->generation == m_session->generation()) {
        if (const Preset *p = findPreset(m_lessonZoom); p && s->sentence == p->sentence) {
            m_heatmap->zoomToCells(p->zoom);
            m_lessonZoom.clear();
        }
    }
    emit viewsUpdated(s->generation);
}

void MainWindow::onSelection(int head, int query)
{
    const int layer = m_session->selectedLayer();
    m_heatmap->setSelection(layer, head, query);
    m_grid->setSelection(layer, head, query);
    m_embeddings->setSelection(layer, head, query);
    m_lines->setSelection(layer, head, query);
    m_row->setSelection(layer, head, query);
    m_layerGrid->setSelection(layer, head, query);
    m_residual->setSelection(layer, head, query);
    m_pipeline->setSelection(layer, head, query);
    m_roles->setSelection(layer, head, query);
    m_rollout->setSelection(layer, head, query);
    m_controls->setSelectedHead(head);

}

QString MainWindow::statusText() const { return m_status->text(); }

ExportView MainWindow::currentView() const
{
    if (m_tabs->currentWidget() == m_grid)
        return ExportView::Grid;
    if (m_tabs->currentWidget() == m_embeddings)
        return ExportView::Embeddings;
    if (m_tabs->currentWidget() == m_lines)
        return ExportView::Lines;
    return ExportView::Weights;
}

QCustomPlot *MainWindow::plotFor(ExportView v) const
{
    switch (v) {
    case ExportView::Weights: return m_heatmap->plot();
    case ExportView::Grid: return m_grid->plot();
    case ExportView::Embeddings: return m_embeddings->plot();
    case ExportView::Row: return m_row->plot();
    case ExportView::Lines: return m_lines->plot();
    }
    return nullptr;
}

// Models ---------------------------------------------------------------------------------------------

bool MainWindow::openModel(const QString &sourceIn, QString *error)
{
    const QString source = ModelLoader::canonicalSource(sourceIn);
    if (source.isEmpty()) {
        useWordVectors();
        return true;
    }
    std::shared_ptr<Model> model;
    if (!ModelLoader::load(source, model, error))
        return false;
    m_modelLoader->addRecent(source);
    setModelFrom(source, std::move(model));
    return true;
}

void MainWindow::startOpenModel(const QString &source)
{
    if (!m_modelLoader->start(source))
        m_status->setText(tr("A model is being read; wait for it or cancel it first."));
    m_modelMenu->setCurrent(m_modelSource); // the checked entry stays the model in use until it is read
}

void MainWindow::askModelFolder()
{
    const QString dir = m_folderPrompt ? m_folderPrompt() : QString();
    if (!dir.isEmpty())
        startOpenModel(dir);
}

void MainWindow::useWordVectors() { setModelFrom(QString(), nullptr); }

void MainWindow::setModelFrom(const QString &source, std::shared_ptr<Model> model)
{
    m_modelSource = model ? source : QString();
    m_modelInfo = model ? model->info() : ModelInfo();
    m_controls->setModel(model ? &m_modelInfo : nullptr);
    m_compare->followModel(model, model ? &m_modelInfo : nullptr);
    m_session->setModel(std::move(model)); // after the controls: the settings it computes with are final
    if (m_session->selectedLayer() >= std::max(1, m_modelInfo.layers))
        m_session->setSelectedLayer(0);
    if (m_session->selectedHead() >= m_controls->settings().numHeads)
        m_session->setSelectedHead(0);
    const bool deep = m_session->model() ? m_modelInfo.layers > 1 : m_controls->settings().stack.enabled();
    showTab(m_layerGrid, deep);
    showTab(m_residual, deep);
    // a model's own tabs, ahead of its first result too (a preset or a session may name them)
    showTab(m_roles, m_session->model() != nullptr);
    showTab(m_rollout, m_session->model() && m_modelInfo.layers > 1);
    m_modelMenu->setCurrent(m_modelSource);
    m_input->setModelTokens(m_session->model() ? ModelLoader::title(m_modelSource) : QString(),
                            QString::fromStdString(m_modelInfo.tokenizer));
    if (m_session->model())
        m_status->setText(tr("Model %1: %2 layers × %3 heads, d_model %4, %5")
                              .arg(ModelLoader::title(m_modelSource))
                              .arg(m_modelInfo.layers)
                              .arg(m_modelInfo.heads)
                              .arg(m_modelInfo.dModel)
                              .arg(QString::fromStdString(m_modelInfo.tokenizer)));
    // another model: the controls it set are its own, not a change to undo
    m_lastSettings = m_controls->settings();
    m_undo->clear();
    m_maskedWords.clear();
    updateModified();
}

void MainWindow::modelFailed(const QString &source, const QString &message)
{
    const QString inUse = m_modelSource.isEmpty() ? tr("the word vectors stay in use")
                                                  : tr("%1 stays in use").arg(ModelLoader::title(m_modelSource));
    m_status->setText(tr("Cannot open %1: %2 (%3)").arg(ModelLoader::title(source), shownText(message, 200), inUse));
    if (m_messagePrompt)
        m_messagePrompt(tr("Cannot open the model"), tr("%1\n\nThe model in use keeps working: %2.").arg(shownText(message), inUse));
}

namespace {

// The model folder a drop names: a folder, or a config.json in one; "" when it names neither.
QString droppedModelFolder(const QMimeData *mime)
{
    if (!mime || !mime->hasUrls() || mime->urls().size() != 1 || !mime->urls().front().isLocalFile())
        return {};
    const QFileInfo fi(mime->urls().front().toLocalFile());
    if (fi.isDir() || (fi.isFile() && fi.fileName() == QLatin1String("config.json")))
        return ModelLoader::canonicalSource(fi.absoluteFilePath());
    return {};
}

} // namespace

void MainWindow::dragEnterEvent(QDragEnterEvent *e)
{
    if (!droppedModelFolder(e->mimeData()).isEmpty())
        e->acceptProposedAction();
    else
        QMainWindow::dragEnterEvent(e);
}

void MainWindow::dropEvent(QDropEvent *e)
{
    const QString dir = droppedModelFolder(e->mimeData());
    if (dir.isEmpty()) {
        QMainWindow::dropEvent(e);
        return;
    }
    e->acceptProposedAction();
    startOpenModel(dir);
}

// Sessions ------------------------------------------------------------------------------------------

SessionState MainWindow::captureSession() const { return m_state->capture(); }
void MainWindow::applySession(const SessionState &s, QStringList *problems)
{
    m_undoing = true; // a session opened is a start, not a change to undo
    m_state->apply(s, problems);
    m_undoing = false;
    m_lastSettings = m_controls->settings();
    m_undo->clear();
    m_maskedWords.clear();
}
void MainWindow::setEmbeddingTable(std::shared_ptr<const EmbeddingTable> table, const QString &description)
{
    m_state->setEmbeddingTable(std::move(table), description);
}
bool MainWindow::loadEmbeddingsFile(const QString &path, QString *error) { return m_state->loadEmbeddingsFile(path, error); }
bool MainWindow::loadProjectionsFile(const QString &path, QString *error) { return m_state->loadProjectionsFile(path, error); }
bool MainWindow::loadStackWeightsFile(const QString &path, QString *error)
{
    return m_state->loadStackWeightsFile(path, error);
}

QWidget *MainWindow::viewWidget(const QString &id) const
{
    for (int i = 0; i < m_tabs->count(); ++i)
        if (m_tabs->widget(i)->objectName() == id + QLatin1String("View"))
            return m_tabs->widget(i);
    return m_heatmap;
}

bool MainWindow::openSession(const QString &path, QString *report) { return m_files->openSession(path, report); }
bool MainWindow::saveSession(const QString &path, QString *error) { return m_files->saveSession(path, error); }
bool MainWindow::restoreLastSession(QString *report) { return m_files->restoreLastSession(report); }
QString MainWindow::sessionPath() const { return m_files->sessionPath(); }
QStringList MainWindow::recentSessions() const { return m_files->recentSessions(); }
void MainWindow::setSavePrompt(SavePrompt p) { m_files->setSavePrompt(std::move(p)); }
void MainWindow::setSaveAsPrompt(PathPrompt p) { m_files->setSaveAsPrompt(std::move(p)); }
void MainWindow::setOpenPrompt(PathPrompt p) { m_files->setOpenPrompt(std::move(p)); }
bool MainWindow::newSession() { return m_files->newSession(); }
bool MainWindow::openSessionInteractive(const QString &path) { return m_files->openSessionInteractive(path); }
bool MainWindow::saveInteractive(bool saveAs) { return m_files->saveInteractive(saveAs); }
void MainWindow::updateModified() { m_files->updateModified(); }

} // namespace attnviz::ui
