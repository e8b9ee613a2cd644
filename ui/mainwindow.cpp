// SPDX-License-Identifier: GPL-3.0-or-later
// The window's assembly: the editors, the views (made by ViewRouter from the registry), the docks,
// the status bar and the wiring between them; the snapshot and the selection handed to the views;
// the forwarding of session files. Menus, models, lessons, edits and the status line are in
// window/window*.cpp.
#include "mainwindow.h"

#include "attnviz/encoderdecoder.h"

#include "controls/controlpanel.h"
#include "controls/inputpanel.h"
#include "controls/sentenceedit.h"
#include "controls/stackcontrols.h"
#include "controls/tokenchipsview.h"
#include "files/sessionfiles.h"
#include "live/livesession.h"
#include "style/appearance.h"
#include "teaching/lessonpanel.h"
#include "teaching/presets.h"
#include "views/compareview.h"
#include "views/embeddingview.h"
#include "views/generationpanel.h"
#include "views/headgridview.h"
#include "views/headrolesview.h"
#include "views/heatmapview.h"
#include "views/layergridview.h"
#include "views/linesview.h"
#include "views/patchingview.h"
#include "views/alignmentview.h"
#include "views/pipelineview.h"
#include "views/predictionsview.h"
#include "views/residualview.h"
#include "views/rolloutview.h"
#include "views/rowview.h"
#include "window/corpusscores.h"
#include "window/dockfold.h"
#include "window/framefit.h"
#include "window/needleprobes.h"
#include "window/exportactions.h"
#include "window/headablations.h"
#include "window/lessonfocus.h"
#include "window/modelloader.h"
#include "window/presentationmode.h"
#include "controls/elidedlabel.h"
#include "window/viewrouter.h"
#include "window/windowstate.h"

#include "bundledvectors.h"

#include <qcustomplot.h>

#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QProxyStyle>
#include <QScreen>
#include <QScrollArea>
#include <QTextCursor>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QUndoStack>

#include <algorithm>

namespace attnviz::ui {

namespace {
const QSize kTabsMinimum(480, 220); // the views' area outside presentation mode

// Tabs with less horizontal padding than the application style's (see the constructor).
class CompactTabStyle : public QProxyStyle {
public:
    int pixelMetric(PixelMetric m, const QStyleOption *option, const QWidget *widget) const override
    {
        const int v = QProxyStyle::pixelMetric(m, option, widget);
        return m == PM_TabBarTabHSpace ? std::max(8, v - 12) : v;
    }
};
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
    connect(input, &InputPanel::targetChanged, m_session, &LiveSession::setTarget);
    connect(input, &InputPanel::beamsChanged, m_session, &LiveSession::setBeams);
    connect(input, &InputPanel::languagesChanged, this, [this](const QString &source, const QString &target) {
        if (!m_session->model())
            return;
        if (Status st = setSeq2SeqLanguages(*m_session->model(), source.toStdString(), target.toStdString()); !st)
            m_input->showNotice(QString::fromStdString(st.message));
        else
            m_session->requestNow(); // the same texts, other codes around them
    });

    // Views: every one of the registry, its tab or dock titled there.
    m_tabs = new QTabWidget(this);
    // the views' own minimums (Compare's 656 px, Residual's 270 px) held the window at 1290 × 739 on
    // a 1280 × 720 projector: each view lays out in less (labels thin, plots scroll). Presenting
    // (no docks but the lesson's) the views' own minimums apply again.
    m_tabs->setMinimumSize(kTabsMinimum);
    // With a model every view has a tab: narrower padding keeps all eleven in view at 1400 pixels (a
    // proxy style, not a style sheet: a style sheet would stop presentation mode's fonts reaching views).
    auto *compactTabs = new CompactTabStyle;
    compactTabs->setParent(m_tabs->tabBar());
    m_tabs->tabBar()->setStyle(compactTabs);
    m_views = new ViewRouter(m_session, m_tabs, this);

    // Generate: continues the text token by token, appending each token to it (causal models)
    m_generation = new GenerationPanel(this);
    m_generation->setObjectName(QStringLiteral("generationPanel"));
    m_generation->setVisible(false);
    statusBar()->addPermanentWidget(m_generation); // beside the status line: no row of its own above the views
    connect(m_generation, &GenerationPanel::appendText, this, [this](const QString &piece) {
        QTextCursor c(m_queryEdit->document());
        c.movePosition(QTextCursor::End);
        c.insertText(piece);
    });
    connect(m_generation, &GenerationPanel::showRow, m_session, &LiveSession::setSelectedQuery);

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
    const auto addDock = [this](const QString &name, const QString &title, QWidget *content, Qt::DockWidgetArea area) {
        auto *dock = new QDockWidget(title, this);
        dock->setObjectName(name);
        dock->setWidget(content);
        addDockWidget(area, dock);
        return dock;
    };
    addDock(QStringLiteral("controlsDock"), tr("Controls"), controlsScroll, Qt::LeftDockWidgetArea);
    QDockWidget *rowDock = addDock(QStringLiteral("rowDock"), tr("Selected query"), rowView(), Qt::BottomDockWidgetArea);
    resizeDocks({rowDock}, {230}, Qt::Vertical);
    // on a short window it gives way to the current view, and folds to its title bar
    auto *rowFold = new DockFold(this, rowDock, [this]() -> QWidget * { return presentationMode() ? nullptr : m_tabs->currentWidget(); });
    rowFold->setReadableChartHeight([this] { return rowView()->readableHeight(); });
    m_lesson = new LessonPanel(this);
    addDock(QStringLiteral("lessonDock"), tr("Lesson"), m_lesson, Qt::RightDockWidgetArea)->hide(); // a preset, or the View menu
    QDockWidget *predictionsDock = addDock(QStringLiteral("predictionsDock"), tr("Predictions"), predictionsView(), Qt::RightDockWidgetArea);
    predictionsDock->hide(); // shown while the model has an LM / MLM head
    m_views->setDock(QStringLiteral("predictions"), predictionsDock);
    connect(m_views, &ViewRouter::dockListed, this, [this](QDockWidget *dock) {
        auto *lesson = findChild<QDockWidget *>(QStringLiteral("lessonDock"));
        if (dock->isVisible() && lesson && lesson->isVisible()) // a lesson quotes both: the column is shared
            resizeDocks({lesson, dock}, {height() * 11 / 20, height() * 9 / 20}, Qt::Vertical);
    });
    connect(m_lesson, &LessonPanel::presetChosen, this, [this](const QString &id) { applyPreset(id); });
    connect(m_lesson, &LessonPanel::stepRequested, this, &MainWindow::stepLesson);
    // The Compare tab shows both sides' rows itself, and the Pipeline explains any cell of the row: they
    // take the row dock's height while they are shown. Compare lists both sides' next tokens too: where
    // it is narrower than its maps and the focus word's rows need (1280 × 720), it takes the
    // Predictions dock's width, alone in its column, until another tab is shown.
    // Presenting shows no dock but the lessons': stepping off those tabs brings the row back only
    // after Esc (it came back over the view, and the window grew past a 720 px screen).
    const auto foldPredictions = [this, predictionsDock] {
        if (presentationMode() || m_tabs->currentWidget() != compareView() || predictionsDock->isHidden() ||
            !compareView()->isVisible() || compareView()->width() >= compareView()->roomyWidth())
            return;
        for (QDockWidget *d : findChildren<QDockWidget *>())
            if (d != predictionsDock && d->isVisible() && dockWidgetArea(d) == dockWidgetArea(predictionsDock))
                return; // the column stays for the other dock: no width to gain
        predictionsDock->hide();
        predictionsDock->setProperty("hiddenForCompare", true);
    };
    // (asked during a layout that is showing the dock: folded after it)
    connect(compareView(), &CompareView::needsRoom, this, foldPredictions, Qt::QueuedConnection);
    const auto syncRowDock = [this, rowDock, predictionsDock, foldPredictions] {
        if (presentationMode())
            return;
        const bool compare = m_tabs->currentWidget() == compareView() || m_tabs->currentWidget() == pipelineView();
        if (compare && !rowDock->isHidden()) { // isHidden: also before the window is shown
            rowDock->hide();
            rowDock->setProperty("hiddenForCompare", true);
        } else if (!compare && rowDock->property("hiddenForCompare").toBool()) {
            rowDock->show();
            rowDock->setProperty("hiddenForCompare", false);
        }
        if (m_tabs->currentWidget() != compareView() && predictionsDock->property("hiddenForCompare").toBool()) {
            predictionsDock->setProperty("hiddenForCompare", false);
            predictionsDock->setVisible(predictionsDock->property("applies").toBool()); // unless the model lost its head
        }
        foldPredictions(); // (a tab shown gets no resize: the pages share one size)
    };
    connect(m_tabs, &QTabWidget::currentChanged, this, syncRowDock);
    // after Esc, once presentation mode has put the docks back as they were (its own queued restore)
    connect(this, &MainWindow::presentationModeChanged, this, [this, syncRowDock](bool on) {
        if (!on)
            QTimer::singleShot(0, this, syncRowDock);
    });

    m_status = new ElidedLabel(this); // one line, ended with "…" where the bar is narrower
    m_status->setObjectName(QStringLiteral("statusLabel"));
    statusBar()->addWidget(m_status, 1);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 0);
    m_progress->setMaximumWidth(160);
    m_progress->setVisible(false);
    m_progress->setObjectName(QStringLiteral("computeProgress"));
    statusBar()->addPermanentWidget(m_progress);
    // a long text's prefill can take minutes on a large model: it can be stopped, the views keep
    // what they show
    m_cancelCompute = new QPushButton(tr("Cancel"), this);
    m_cancelCompute->setObjectName(QStringLiteral("cancelComputeButton"));
    m_cancelCompute->setToolTip(tr("Stop computing this text; the views keep what they show"));
    m_cancelCompute->setVisible(false);
    statusBar()->addPermanentWidget(m_cancelCompute);

    // Wiring.
    connect(m_session, &LiveSession::snapshotChanged, this, &MainWindow::onSnapshot);
    connect(m_session, &LiveSession::selectionChanged, this, &MainWindow::onSelection);
    // another layer of the same trace: every view, the chips and the status bar show it
    connect(m_session, &LiveSession::layerChanged, this, [this] { onSnapshot(m_session->snapshot()); });
    // a model on the GPU brings back what the shown views read: the current tab, the shown docks
    // (and a gated MLP's products while a shown view reads them: the Pipeline's MLP stages)
    auto observe = [this] {
        m_session->setObserve(m_views->needed(m_session->selectedLayer()));
        m_session->setKeepMlp(m_views->neededMlp());
    };
    connect(m_session, &LiveSession::layerChanged, this, observe);
    connect(m_tabs, &QTabWidget::currentChanged, this, observe);
    connect(m_views, &ViewRouter::dockListed, this, observe);
    connect(m_session, &LiveSession::headDisplayChanged, this, [this](HeadDisplay d) {
        m_controls->setHeadDisplay(d);
        m_views->setHeadDisplay(d);
        if (d == HeadDisplay::All && m_tabs->currentWidget() != linesView()) // the lines view overlays them
            m_tabs->setCurrentWidget(headGridView());
        else if (m_tabs->currentWidget() == headGridView())
            m_tabs->setCurrentWidget(heatmapView());
    });
    connect(m_session, &LiveSession::busyChanged, headRolesView(), &HeadRolesView::setTraceComputing);
    connect(m_session, &LiveSession::busyChanged, this, [this](bool busy, int) {
        if (!busy && m_needleProbes && m_needleProbes->running())
            return; // the probe's progress stays
        m_progress->setVisible(busy);
        m_cancelCompute->setVisible(busy);
        if (busy)
            m_status->setText(tr("Computing…"));
        else
            m_progress->setRange(0, 0); // the next computation starts without a count
    });
    connect(m_session, &LiveSession::progress, this, [this](int done, int layers) {
        if (!m_progress->isVisible() || layers <= 0)
            return;
        m_progress->setRange(0, layers);
        m_progress->setValue(done);
        m_status->setText(done < layers ? tr("Computing… layer %1 of %2").arg(done + 1).arg(layers)
                                        : tr("Computing… the predictions"));
    });
    connect(m_cancelCompute, &QPushButton::clicked, this, [this] {
        if (m_needleProbes && m_needleProbes->running())
            m_needleProbes->cancel(); // the text's computation goes on
        else
            m_session->cancelCompute();
    });
    connect(m_session, &LiveSession::computeCancelled, this, [this] {
        const SnapshotPtr s = m_session->snapshot();
        m_status->setText(s && s->hasResult()
                              ? tr("Stopped: the views show the text as it was before (%n tokens); edit the text to compute it again.",
                                   nullptr, s->tq())
                              : tr("Stopped; edit the text to compute it again."));
    });
    m_undo = new QUndoStack(this);
    m_corpusScores = new CorpusScores(m_session, headRolesView(), this);
    connect(headRolesView(), &HeadRolesView::corpusRequested, m_corpusScores, &CorpusScores::ask);
    connect(m_corpusScores, &CorpusScores::finished, this, [this](bool, const QString &message) { m_status->setText(message); });
    // the needle probe: the status bar's progress and Cancel while it runs; its text in the editor after
    m_needleProbes = new NeedleProbes(m_session, headRolesView(), this);
    connect(headRolesView(), &HeadRolesView::needleRequested, this, [this] { m_needleProbes->ask(m_queryEdit->toPlainText()); });
    // the span of the Layers tab (the needle after a probe, or tokens marked there): its keys outlined on the Weights map
    connect(headRolesView(), &HeadRolesView::spanChanged, this, [this](int begin, int end, bool needle) {
        heatmapView()->setMarkedKeys(begin, end, needle ? tr("the needle") : tr("the span marked on the Layers tab"));
    });
    connect(m_needleProbes, &NeedleProbes::busyChanged, this, [this](bool busy) {
        m_progress->setVisible(busy || m_session->busy());
        m_cancelCompute->setVisible(busy || m_session->busy());
        m_progress->setRange(0, 0);
        if (busy)
            m_status->setText(tr("Needle probe: reading the prompt…"));
    });
    connect(m_needleProbes, &NeedleProbes::progress, this, [this](int done, int total) {
        m_progress->setRange(0, total);
        m_progress->setValue(done);
        // the prompt's layers, then the answer's tokens (needleprobe.h NeedleRequest::progress)
        const int layers = m_session->model() ? std::max(m_session->model()->info().layers, 1) : 1;
        m_status->setText(done < layers ? tr("Needle probe: reading the prompt, layer %1 of %2").arg(done + 1).arg(layers)
                                        : tr("Needle probe: answer token %1 of %2").arg(done - layers).arg(total - layers));
    });
    connect(m_needleProbes, &NeedleProbes::finished, this, [this](bool ok, const QString &message, std::shared_ptr<const NeedleProbe> probe) {
        m_status->setText(message);
        if (!ok || !probe)
            return;
        setSentence(QString::fromStdString(probe->text));
        m_tabs->setCurrentWidget(headRolesView());
    });
    m_ablations = new HeadAblations(m_session, m_undo, [this] { return editsRefusal(m_modelInfo, m_session->model() != nullptr); }, this);
    connect(m_views, &ViewRouter::headAblationRequested, m_ablations, &HeadAblations::ablate);
    connect(m_views, &ViewRouter::headRestoreRequested, m_ablations, &HeadAblations::restore);
    connect(headRolesView(), &HeadRolesView::headPointed, m_ablations, &HeadAblations::point);
    connect(m_session, &LiveSession::editsChanged, this, &MainWindow::updateModified);
    connect(m_controls, &ControlPanel::settingsChanged, this, &MainWindow::onSettingsChanged);
    connect(m_controls, &ControlPanel::headDisplayChanged, m_session, &LiveSession::setHeadDisplay);
    connect(m_controls, &ControlPanel::headChanged, m_session, &LiveSession::setSelectedHead);
    connect(m_controls, &ControlPanel::attentionKindChanged, m_session, &LiveSession::setAttentionKind);
    connect(m_session, &LiveSession::attentionKindChanged, this, [this](AttentionKind kind) {
        m_controls->setAttentionKind(kind);
        if (m_session->snapshot())
            onSnapshot(m_session->snapshot()); // the attention views draw the other attention
        updateModified();
    });
    connect(m_controls, &ControlPanel::showNumbersChanged, heatmapView(), &HeatmapView::setShowNumbers);
    heatmapView()->setShowNumbers(m_controls->showNumbers());
    // a long text's maps: the Heads tab's panels and Compare's maps pool as the Weights map does (one
    // switch, in the Weights and Heads menus)
    connect(heatmapView()->meanPoolingAction(), &QAction::toggled, headGridView(),
            [this](bool on) { headGridView()->setPooling(on ? Pooling::Mean : Pooling::Max); });
    connect(headGridView()->meanPoolingAction(), &QAction::toggled, heatmapView(),
            [this](bool on) { heatmapView()->setPooling(on ? Pooling::Mean : Pooling::Max); });
    connect(heatmapView()->meanPoolingAction(), &QAction::toggled, compareView(),
            [this](bool on) { compareView()->setPooling(on ? Pooling::Mean : Pooling::Max); });
    connect(m_controls, &ControlPanel::clearCustomMaskRequested, m_session, &LiveSession::clearCustomMask);
    connect(m_controls, &ControlPanel::loadEmbeddingsRequested, m_state, &WindowState::startLoadEmbeddings);
    connect(m_controls, &ControlPanel::useBundledRequested, m_state, &WindowState::useBundled);
    connect(m_controls, &ControlPanel::loadProjectionsRequested, m_state, &WindowState::askProjectionsFile);
    // the rest of the views' requests go to the session through the router
    connect(heatmapView(), &HeatmapView::querySelected, predictionsView(), &PredictionsView::setSelectedPosition);
    connect(heatmapView(), &HeatmapView::cellToggled, m_session, &LiveSession::toggleCustomCell);
    connect(m_queryChips, &TokenChipsView::tokenHovered, predictionsView(), &PredictionsView::setHoveredPosition);
    connect(heatmapView(), &HeatmapView::queryHovered, predictionsView(), &PredictionsView::setHoveredPosition);
    connect(linesView(), &LinesView::optionsChanged, this, &MainWindow::updateModified);
    connect(alignmentView(), &AlignmentView::settingsChanged, this, &MainWindow::updateModified);
    connect(m_controls->stackControls(), &StackControls::layerChanged, m_session, &LiveSession::setSelectedLayer);
    connect(m_controls, &ControlPanel::layerChanged, m_session, &LiveSession::setSelectedLayer);
    connect(m_controls, &ControlPanel::layerChanged, this, &MainWindow::updateModified);
    connect(m_controls->stackControls(), &StackControls::loadWeightsRequested, m_state,
            &WindowState::askStackWeightsFile);
    connect(compareView(), &CompareView::comparisonRequested, this, &MainWindow::startComparison);
    connect(compareView(), &CompareView::sideARequested, this, &MainWindow::applySide);
    connect(patchingView(), &PatchingView::patchRequested, this,
            [this](const Intervention &e, const QString &, const QString &corrupted, const QString &what) {
                applyPatch(e, corrupted, what);
            });
    connect(patchingView(), &PatchingView::patchClearRequested, this, &MainWindow::clearPatch);
    // a sender head dragged onto a receiver on the Layers grid: the path sweep into that receiver
    connect(headRolesView(), &HeadRolesView::pathPatchRequested, this, [this](int sl, int sh, int rl, int rh) {
        showView(QStringLiteral("patching"));
        patchingView()->openPath(sl, sh, rl, rh);
    });
    connect(m_queryChips, &TokenChipsView::tokenClicked, this, [this](int i) { onTokenClicked(false, i); });
    // tokens selected by a drag across the chips, or words selected in the text: the Layers tab's
    // "Use selection as span"
    connect(m_queryChips, &TokenChipsView::rangeSelected, headRolesView(), &HeadRolesView::setSelectedTokens);
    connect(m_queryEdit, &QPlainTextEdit::selectionChanged, this, [this] {
        const QTextCursor c = m_queryEdit->textCursor();
        const SnapshotPtr s = m_session->snapshot();
        if (!c.hasSelection() || !s || !s->trace || s->encoderDecoder || s->sentence != m_queryEdit->toPlainText()) {
            headRolesView()->setSelectedTokens(-1, -1);
            return;
        }
        // the tokens' begin and end are bytes of the text in UTF-8
        const QString text = m_queryEdit->toPlainText();
        const size_t from = size_t(text.left(c.selectionStart()).toUtf8().size()),
                     to = size_t(text.left(c.selectionEnd()).toUtf8().size());
        int first = -1, last = -1;
        for (int i = 0; i < int(s->trace->tokens.size()); ++i) {
            const TraceToken &t = s->trace->tokens[size_t(i)];
            if (t.special || t.end <= t.begin || t.end <= from || t.begin >= to)
                continue;
            if (first < 0)
                first = i;
            last = i;
        }
        headRolesView()->setSelectedTokens(first, first < 0 ? -1 : last + 1);
    });
    connect(m_keyChips, &TokenChipsView::tokenClicked, this, [this](int i) { onTokenClicked(true, i); });

    // Unsaved changes: whatever a session holds, compared with the state last saved or opened.
    for (SentenceEdit *e : {m_queryEdit, m_keyEdit, m_input->targetEdit()})
        connect(e, &QPlainTextEdit::textChanged, this, &MainWindow::updateModified);
    connect(m_session, &LiveSession::selectionChanged, this, &MainWindow::updateModified);
    connect(m_session, &LiveSession::headDisplayChanged, this, &MainWindow::updateModified);
    connect(heatmapView(), &HeatmapView::cellToggled, this, &MainWindow::updateModified);
    connect(m_controls, &ControlPanel::clearCustomMaskRequested, this, &MainWindow::updateModified);
    connect(m_controls, &ControlPanel::showNumbersChanged, this, &MainWindow::updateModified);
    connect(m_controls->stackControls(), &StackControls::layerChanged, this, &MainWindow::updateModified);
    connect(m_tabs, &QTabWidget::currentChanged, this, &MainWindow::updateModified);

    m_presentation = new PresentationMode(this, m_tabs, pipelineView(), m_lesson);
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
        FrameFit::keepOnScreen(this); // and with a window manager's frame around it, still within
    }
    m_files->markClean();
}

MainWindow::~MainWindow() = default;

HeatmapView *MainWindow::heatmapView() const { return m_views->view<HeatmapView>(QStringLiteral("weights")); }
HeadGridView *MainWindow::headGridView() const { return m_views->view<HeadGridView>(QStringLiteral("grid")); }
EmbeddingView *MainWindow::embeddingView() const { return m_views->view<EmbeddingView>(QStringLiteral("embeddings")); }
RowView *MainWindow::rowView() const { return m_views->view<RowView>(QStringLiteral("row")); }
LayerGridView *MainWindow::layerGridView() const { return m_views->view<LayerGridView>(QStringLiteral("layers")); }
ResidualView *MainWindow::residualView() const { return m_views->view<ResidualView>(QStringLiteral("residual")); }
PipelineView *MainWindow::pipelineView() const { return m_views->view<PipelineView>(QStringLiteral("pipeline")); }
CompareView *MainWindow::compareView() const { return m_views->view<CompareView>(QStringLiteral("compare")); }
PatchingView *MainWindow::patchingView() const { return m_views->view<PatchingView>(QStringLiteral("patching")); }
AlignmentView *MainWindow::alignmentView() const { return m_views->view<AlignmentView>(QStringLiteral("alignment")); }
LinesView *MainWindow::linesView() const { return m_views->view<LinesView>(QStringLiteral("lines")); }
HeadRolesView *MainWindow::headRolesView() const { return m_views->view<HeadRolesView>(QStringLiteral("headRoles")); }
RolloutView *MainWindow::rolloutView() const { return m_views->view<RolloutView>(QStringLiteral("rollout")); }
PredictionsView *MainWindow::predictionsView() const { return m_views->view<PredictionsView>(QStringLiteral("predictions")); }

void MainWindow::showEvent(QShowEvent *e)
{
    QMainWindow::showEvent(e);
    if (!m_docksSized) { // docks take their sizes once the window has its own
        m_docksSized = true;
        QTimer::singleShot(0, this, [this] {
            if (auto *lesson = findChild<QDockWidget *>(QStringLiteral("lessonDock")))
                resizeDocks({lesson}, {std::max(260, width() / 5)}, Qt::Horizontal);
            fitRowDock(); // its first 230 px are most of a short window's central area
        });
    }
}

void MainWindow::resizeEvent(QResizeEvent *e)
{
    QMainWindow::resizeEvent(e);
    fitRowDock();
}

void MainWindow::fitRowDock()
{
    // The current view keeps the height: on a short window (a 1280 × 720 projector, larger text) the
    // Selected query dock under it gives way, and folds to its title bar (window/dockfold.h)
    if (auto *fold = findChild<DockFold *>(QStringLiteral("rowDockFold")))
        fold->fit();
}

void MainWindow::closeEvent(QCloseEvent *e)
{
    if (!m_files->close()) {
        e->ignore();
        return;
    }
    QMainWindow::closeEvent(e);
}

ViewScope MainWindow::viewScope(bool stack) const
{
    ViewScope scope;
    scope.model = m_session->model() != nullptr;
    scope.modelLayers = scope.model ? m_modelInfo.layers : 0;
    scope.encoderDecoder = scope.model && m_modelInfo.architecture.encoderDecoder;
    scope.stack = !scope.model && stack;
    return scope;
}

void MainWindow::onSnapshot(SnapshotPtr s)
{
    for (QCustomPlot *p : findChildren<QCustomPlot *>()) // views may make plots as they go
        AppearanceManager::track(p);
    // an error keeps the tabs as they were, and so does a late result of the model (or the word
    // vectors) used before the one now open
    const bool listTabs = (s->hasResult() || s->sentence.trimmed().isEmpty()) && s->fromModel() == (m_session->model() != nullptr);
    m_views->setSnapshot(s, viewScope(s->settings.stack.enabled()), listTabs);
    if (listTabs)
        m_generation->setVisible(s->causalLm() && !s->encoderDecoder);
    m_generation->setSnapshot(s);
    m_queryChips->setGeneratedFrom(m_generation->firstGeneratedChip());
    const SnapshotPtr shown = seq2seqView(s, m_session->attentionKind()); // its layers: the selector's attention
    const int layer = shown->layerIndex(m_session->selectedLayer());
    if (s->deep())
        m_controls->stackControls()->setShownLayer(layer);
    if (s->hasResult()) {
        m_controls->setLayerCount(shown->numLayers());
        m_controls->setShownLayer(layer);
    }
    onSelection(m_session->shownHead(), m_session->selectedQuery());
    showSnapshotStatus(*s, layer);
    if (!m_lessonFocus.isEmpty() && s->hasResult() && s->generation == m_session->generation()) {
        if (const Preset *p = findPreset(m_lessonFocus); p && m_tabs->currentWidget() == pipelineView())
            applyLessonFocus(*pipelineView(), *p);
        m_lessonFocus.clear();
    }
    if (!m_lessonZoom.isEmpty() && s->hasResult() && s->generation == m_session->generation()) {
        if (const Preset *p = findPreset(m_lessonZoom); p && s->sentence == p->sentence) {
            heatmapView()->zoomToCells(p->zoom);
            m_lessonZoom.clear();
        }
    }
    emit viewsUpdated(s->generation);
}

void MainWindow::onSelection(int head, int query)
{
    m_views->setSelection(m_session->selectedLayer(), head, query);
    m_controls->setSelectedHead(head);
}

QString MainWindow::statusText() const { return m_status->text(); }

ExportView MainWindow::currentView() const
{
    ExportView v = ExportView::Weights; // the tabs that are no export view export the weights
    parseExportView(currentViewId(), v);
    return v;
}

QCustomPlot *MainWindow::plotFor(ExportView v) const { return m_views->view(exportViewName(v))->plot(); }

bool MainWindow::showView(const QString &id) { return m_views->showView(id); }
QString MainWindow::currentViewId() const { return m_views->currentViewId(); }
QWidget *MainWindow::viewWidget(const QString &id) const { return m_views->viewWidget(id); }

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
