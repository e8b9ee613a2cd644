// SPDX-License-Identifier: GPL-3.0-or-later
#include "mainwindow.h"

#include "fallbackbackend.h"

#include "compareview.h"
#include "controlpanel.h"
#include "embeddingview.h"
#include "headgridview.h"
#include "heatmapview.h"
#include "layergridview.h"
#include "appearance.h"
#include "legibility.h"
#include "lessonpanel.h"
#include "presets.h"
#include "seedtables.h"
#include "linesview.h"
#include "livecompute.h"
#include "livesession.h"
#include "pipelineview.h"
#include "residualview.h"
#include "rowview.h"
#include "seedtables.h"
#include "sentenceedit.h"
#include "stackcompute.h"
#include "stackcontrols.h"
#include "tokenchipsview.h"

#include "bundledvectors.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <qcustomplot.h>

#include <QActionGroup>
#include <QDockWidget>
#include <QInputDialog>
#include <QScreen>
#include <QShortcut>
#include <QTimer>
#include <QDoubleSpinBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QFutureWatcher>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QProgressDialog>
#include <QSaveFile>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>

namespace attnviz::ui {

namespace {

QWidget *labelled(const QString &label, QWidget *w, QWidget *parent)
{
    auto *box = new QWidget(parent);
    auto *l = new QVBoxLayout(box);
    l->setContentsMargins(0, 0, 0, 0);
    l->setSpacing(2);
    auto *lab = new QLabel(label, box);
    QFont f = lab->font();
    f.setBold(true);
    lab->setFont(f);
    l->addWidget(lab);
    l->addWidget(w);
    return box;
}

} // namespace

MainWindow::MainWindow(QWidget *parent)
    : QMainWindow(parent)
    , m_session(new LiveSession(this))
{
    m_savePrompt = [this](const QString &name) {
        const auto b = QMessageBox::question(this, tr("Unsaved changes"), tr("Save changes to %1?").arg(name),
                                             QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel,
                                             QMessageBox::Save);
        return b == QMessageBox::Save ? SaveAnswer::Save : b == QMessageBox::Discard ? SaveAnswer::Discard : SaveAnswer::Cancel;
    };
    m_saveAsPrompt = [this](const QString &suggested) {
        return QFileDialog::getSaveFileName(this, tr("Save session"), suggested, tr("attnviz sessions (*.attnviz)"));
    };
    m_openPrompt = [this](const QString &dir) {
        return QFileDialog::getOpenFileName(this, tr("Open session"), dir,
                                            tr("attnviz sessions (*.attnviz);;All files (*)"));
    };

    // Input: sentence, key/value sentence, token chips.
    auto *input = new QWidget(this);
    auto *il = new QVBoxLayout(input);
    il->setContentsMargins(6, 6, 6, 2);
    m_queryEdit = new SentenceEdit(input);
    m_queryEdit->setObjectName(QStringLiteral("sentenceEdit"));
    m_queryEdit->setPlaceholderText(tr("Type a sentence: every keystroke recomputes."));
    m_queryEdit->setMaximumHeight(m_queryEdit->sizeHint().height());
    m_keyEdit = new SentenceEdit(input);
    m_keyEdit->setObjectName(QStringLiteral("keySentenceEdit"));
    m_keyEdit->setPlaceholderText(tr("Optional key/value sentence: fill it for cross-attention (queries from the "
                                     "sentence above, keys and values from this one)."));
    m_keyEdit->setMaximumHeight(m_keyEdit->fontMetrics().lineSpacing() + 14);
    m_keyEdit->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    m_queryChips = new TokenChipsView(input);
    m_queryChips->setObjectName(QStringLiteral("queryChips"));
    m_queryChips->setPlaceholder(tr("No tokens yet."));
    m_keyChips = new TokenChipsView(input);
    m_keyChips->setObjectName(QStringLiteral("keyChips"));
    m_keyChips->setVisible(false);
    auto scrolled = [input](TokenChipsView *w) {
        auto *sa = new QScrollArea(input);
        sa->setWidget(w);
        sa->setWidgetResizable(true);
        sa->setFrameShape(QFrame::NoFrame);
        sa->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        sa->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
        // as tall as the chips need, at most three rows; scroll beyond
        const int row = w->minimumSizeHint().height();
        sa->setFixedHeight(row);
        QObject::connect(w, &TokenChipsView::chipsLaidOut, sa, [sa, w, row](int height) {
            sa->setFixedHeight(std::clamp(height, row, 3 * row));
            Q_UNUSED(w);
        });
        return sa;
    };
    il->addWidget(labelled(tr("Sentence (queries; keys too unless a key/value sentence is given)"), m_queryEdit, input));
    auto *chipsHelp = new QLabel(tr("Tokens — dashed orange: not in the embedding table (a deterministic stand-in "
                                    "vector is used); click a token to mask it as padding."),
                                 input);
    chipsHelp->setWordWrap(true);
    chipsHelp->setStyleSheet(QStringLiteral("color: palette(mid)"));
    il->addWidget(chipsHelp);
    il->addWidget(scrolled(m_queryChips));
    il->addWidget(labelled(tr("Key/value sentence (cross-attention)"), m_keyEdit, input));
    auto *keyChipsArea = scrolled(m_keyChips);
    il->addWidget(keyChipsArea);
    keyChipsArea->setVisible(false);
    connect(m_keyEdit, &QPlainTextEdit::textChanged, this, [this, keyChipsArea] {
        const bool cross = !m_keyEdit->toPlainText().trimmed().isEmpty();
        keyChipsArea->setVisible(cross);
        m_keyChips->setVisible(cross);
        m_session->setKeySentence(m_keyEdit->toPlainText());
    });
    connect(m_queryEdit, &QPlainTextEdit::textChanged, this,
            [this] { m_session->setSentence(m_queryEdit->toPlainText()); });
    m_notice = new QLabel(input);
    m_notice->setObjectName(QStringLiteral("notice"));
    m_notice->setWordWrap(true);
    m_notice->setStyleSheet(QStringLiteral("color: #b05a00"));
    m_notice->setVisible(false);
    il->addWidget(m_notice);
    for (SentenceEdit *e : {m_queryEdit, m_keyEdit})
        connect(e, &SentenceEdit::pasteReport, this, [this](const QString &m) {
            m_notice->setText(m);
            m_notice->setVisible(true);
        });

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
    m_tabs->addTab(m_heatmap, tr("Weights"));
    m_tabs->addTab(m_grid, tr("All heads"));
    m_tabs->addTab(m_embeddings, tr("Contextual embeddings"));
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
    m_tabs->addTab(m_layerGrid, tr("Layers × heads"));
    m_tabs->addTab(m_residual, tr("Residual stream"));
    m_tabs->setTabVisible(m_tabs->indexOf(m_layerGrid), false);
    m_tabs->setTabVisible(m_tabs->indexOf(m_residual), false);
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
    connect(m_lesson, &LessonPanel::presetChosen, this, [this](const QString &id) { applyPreset(id); });
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
    statusBar()->addWidget(m_status, 1);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 0);
    m_progress->setMaximumWidth(160);
    m_progress->setVisible(false);
    statusBar()->addPermanentWidget(m_progress);

    // Wiring.
    connect(m_session, &LiveSession::snapshotChanged, this, &MainWindow::onSnapshot);
    connect(m_session, &LiveSession::selectionChanged, this, &MainWindow::onSelection);
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
    connect(m_controls, &ControlPanel::settingsChanged, this, [this](const ComputeSettings &s) {
        if (s.backend != m_backendMode) { // made here, on the GUI thread, as a QRhi needs
            m_backendMode = s.backend;
            m_session->setBackend(makeWindowBackend(s.backend.toStdString()));
        }
        m_session->setSettings(s);
        if (!m_applyingPreset)
            m_lesson->markEdited();
        m_heatmap->setCustomMaskEditing(s.mask == MaskChoice::Custom);
        m_tabs->setTabVisible(m_tabs->indexOf(m_layerGrid), s.stack.enabled());
        m_tabs->setTabVisible(m_tabs->indexOf(m_residual), s.stack.enabled());
        updateModified();
    });
    connect(m_controls, &ControlPanel::headDisplayChanged, m_session, &LiveSession::setHeadDisplay);
    connect(m_controls, &ControlPanel::headChanged, m_session, &LiveSession::setSelectedHead);
    connect(m_controls, &ControlPanel::showNumbersChanged, m_heatmap, &HeatmapView::setShowNumbers);
    m_heatmap->setShowNumbers(m_controls->showNumbers());
    connect(m_controls, &ControlPanel::clearCustomMaskRequested, m_session, &LiveSession::clearCustomMask);
    connect(m_controls, &ControlPanel::loadEmbeddingsRequested, this, &MainWindow::startLoadEmbeddings);
    connect(m_controls, &ControlPanel::useBundledRequested, this, &MainWindow::useBundled);
    connect(m_controls, &ControlPanel::loadProjectionsRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Load projections"), QString(),
                                                          tr("Projection weights (*.json)"));
        QString error;
        if (!path.isEmpty() && !loadProjectionsFile(path, &error))
            QMessageBox::warning(this, tr("Cannot load projections"), error);
    });
    connect(m_heatmap, &HeatmapView::querySelected, m_session, &LiveSession::setSelectedQuery);
    connect(m_heatmap, &HeatmapView::cellToggled, m_session, &LiveSession::toggleCustomCell);
    connect(m_embeddings, &EmbeddingView::querySelected, m_session, &LiveSession::setSelectedQuery);
    connect(m_grid, &HeadGridView::headSelected, this, [this](int head) {
        m_session->setSelectedHead(head);
        if (m_session->headDisplay() == HeadDisplay::All)
            m_session->setHeadDisplay(head < 0 ? HeadDisplay::Average : HeadDisplay::One);
        m_tabs->setCurrentWidget(m_heatmap);
    });
    connect(m_layerGrid, &LayerGridView::thumbnailSelected, this, [this](int layer, int head) {
        m_session->setSelectedLayer(layer);
        m_session->setSelectedHead(head);
        if (m_session->headDisplay() == HeadDisplay::All)
            m_session->setHeadDisplay(HeadDisplay::One);
        m_tabs->setCurrentWidget(m_heatmap);
    });
    connect(m_lines, &LinesView::querySelected, m_session, &LiveSession::setSelectedQuery);
    connect(m_lines, &LinesView::headSelected, m_session, &LiveSession::setSelectedHead);
    connect(m_lines, &LinesView::headDisplayRequested, m_session, &LiveSession::setHeadDisplay);
    connect(m_lines, &LinesView::optionsChanged, this, &MainWindow::updateModified);
    connect(m_residual, &ResidualView::querySelected, m_session, &LiveSession::setSelectedQuery);
    connect(m_controls->stackControls(), &StackControls::layerChanged, m_session, &LiveSession::setSelectedLayer);
    connect(m_controls->stackControls(), &StackControls::loadWeightsRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Load stack weights"), QString(),
                                                          tr("safetensors, GPT-2 names (*.safetensors);;All files (*)"));
        QString error;
        if (!path.isEmpty() && !loadStackWeightsFile(path, &error))
            QMessageBox::warning(this, tr("Cannot load weights"), tr("%1\n\nThe current weights stay in use.").arg(error));
    });
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

    buildMenus();
    for (QCustomPlot *p : findChildren<QCustomPlot *>())
        AppearanceManager::track(p);
    connect(AppearanceManager::instance(), &AppearanceManager::changed, this, &MainWindow::onAppearanceChanged);

    // The bundled table, when this build has it.
    m_controls->setBundledAvailable(hasBundledEmbeddings(),
                                    tr("This build has no bundled word vectors; load a table instead."));
    if (hasBundledEmbeddings()) {
        useBundled();
    } else {
        m_controls->setTableDescription(
            tr("No bundled vectors in this build. Load a GloVe / word2vec / fastText / .avec table."));
    }
    m_session->setSettings(m_controls->settings());
    m_session->setSentence(QString());
    m_queryEdit->setPlainText(defaultSentence());

    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    if (!settings.contains(QStringLiteral("window/geometry")))
        resize(1400, 900);
    markClean();
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
    m_discarded = false;
    if (!maybeSave()) {
        e->ignore();
        return;
    }
    // What the next start restores: the session as it is now, or as last saved when the changes were
    // discarded.
    const SessionState last = m_discarded ? m_clean : captureSession();
    QSettings settings;
    settings.setValue(QStringLiteral("session/last"),
                      QString::fromUtf8(QJsonDocument(sessionToJson(last)).toJson(QJsonDocument::Compact)));
    settings.setValue(QStringLiteral("session/lastPath"), m_sessionPath);
    settings.setValue(QStringLiteral("session/lastModified"), !m_discarded && isWindowModified());
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(e);
}

void MainWindow::buildMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&New session"), QKeySequence::New, this, [this] { newSession(); });
    file->addAction(tr("&Open session…"), QKeySequence(tr("Ctrl+O")), this, [this] { openSessionInteractive(); });
    m_recentMenu = file->addMenu(tr("Open &recent"));
    m_recentMenu->setObjectName(QStringLiteral("recentMenu"));
    connect(m_recentMenu, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);
    rebuildRecentMenu();
    file->addAction(tr("&Save"), QKeySequence(tr("Ctrl+S")), this, [this] { saveInteractive(false); });
    file->addAction(tr("Save &as…"), QKeySequence(tr("Ctrl+Shift+S")), this, [this] { saveInteractive(true); });
    file->addSeparator();
    file->addAction(tr("Load &embeddings…"), this, &MainWindow::startLoadEmbeddings);
    file->addAction(tr("Load &projections…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Load projections"), QString(),
                                                          tr("Projection weights (*.json)"));
        QString error;
        if (!path.isEmpty() && !loadProjectionsFile(path, &error))
            QMessageBox::warning(this, tr("Cannot load projections"), error);
    });
    file->addSeparator();
    file->addAction(tr("Export current &view…"), QKeySequence(tr("Ctrl+E")), this, [this] {
        if (m_tabs->currentWidget() == m_layerGrid)
            exportPlot(m_layerGrid->plot(), QStringLiteral("layers"));
        else if (m_tabs->currentWidget() == m_residual)
            exportPlot(m_residual->plot(), QStringLiteral("residual"));
        else if (m_tabs->currentWidget() == m_pipeline)
            exportPipelineStage();
        else if (m_tabs->currentWidget() == m_compare)
            exportComparePart();
        else
            exportFigure(currentView());
    });
    file->addAction(tr("Export &all heads…"), this, [this] { exportFigure(ExportView::Grid); });
    file->addAction(tr("Export &matrices (CSV, NPY, JSON)…"), this, &MainWindow::exportMatrices);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    buildViewMenu();
    QMenu *presetMenu = menuBar()->addMenu(tr("&Presets"));
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
}

void MainWindow::buildViewMenu()
{
    QMenu *view = menuBar()->addMenu(tr("&View"));
    auto radioMenu = [this, view](const QString &title, const QList<QPair<QString, int>> &items, int current,
                                  std::function<void(Appearance &, int)> set) {
        QMenu *m = view->addMenu(title);
        auto *group = new QActionGroup(m);
        for (const auto &[text, value] : items) {
            QAction *a = m->addAction(text);
            a->setCheckable(true);
            a->setChecked(value == current);
            a->setData(value);
            group->addAction(a);
            connect(a, &QAction::triggered, this, [set, value] {
                Appearance ap = AppearanceManager::instance()->appearance();
                set(ap, value);
                AppearanceManager::instance()->setAppearance(ap);
            });
        }
        m_appearanceGroups.push_back(group);
    };
    const Appearance &ap = AppearanceManager::instance()->appearance();
    radioMenu(tr("&Theme"),
              {{tr("Follow the system"), int(Theme::System)}, {tr("Light"), int(Theme::Light)},
               {tr("Dark"), int(Theme::Dark)}, {tr("High contrast"), int(Theme::HighContrast)}},
              int(ap.theme), [](Appearance &a, int v) { a.theme = Theme(v); });
    radioMenu(tr("&Weights colour map"),
              {{tr("Viridis"), int(SequentialMap::Viridis)}, {tr("Cividis (colour-blind safe)"), int(SequentialMap::Cividis)},
               {tr("Magma"), int(SequentialMap::Magma)}, {tr("Greys (print)"), int(SequentialMap::Greys)}},
              int(ap.sequential), [](Appearance &a, int v) { a.sequential = SequentialMap(v); });
    radioMenu(tr("&Signed colour map"),
              {{tr("Blue – white – red"), int(DivergingMap::RedBlue)},
               {tr("Purple – white – orange (colour-blind safe)"), int(DivergingMap::PurpleOrange)}},
              int(ap.diverging), [](Appearance &a, int v) { a.diverging = DivergingMap(v); });
    view->addSeparator();
    auto scaleBy = [](double f) {
        Appearance a = AppearanceManager::instance()->appearance();
        a.fontScale = f == 0 ? 1.0 : a.fontScale * f;
        AppearanceManager::instance()->setAppearance(a);
    };
    view->addAction(tr("&Larger text"), QKeySequence::ZoomIn, this, [scaleBy] { scaleBy(1.15); });
    view->addAction(tr("&Smaller text"), QKeySequence::ZoomOut, this, [scaleBy] { scaleBy(1 / 1.15); });
    view->addAction(tr("&Reset text size"), QKeySequence(tr("Ctrl+0")), this, [scaleBy] { scaleBy(0); });
    view->addSeparator();
    for (auto *dock : findChildren<QDockWidget *>())
        view->addAction(dock->toggleViewAction()); // Controls, Selected query, Lesson
    view->addSeparator();
    m_presentationAction = view->addAction(tr("&Presentation mode"));
    m_presentationAction->setObjectName(QStringLiteral("presentationAction"));
    m_presentationAction->setCheckable(true);
    m_presentationAction->setShortcut(QKeySequence(Qt::Key_F11));
    m_presentationAction->setToolTip(tr("Full screen, large text, high contrast; arrows or space step through the "
                                        "stages, Esc leaves."));
    connect(m_presentationAction, &QAction::toggled, this, &MainWindow::setPresentationMode);
    // stepping keys, live only in presentation mode (an editor with focus keeps its arrow keys)
    const QList<QPair<QKeySequence, int>> steps = {{QKeySequence(Qt::Key_Right), 1}, {QKeySequence(Qt::Key_PageDown), 1},
                                                   {QKeySequence(Qt::Key_Space), 1},  {QKeySequence(Qt::Key_Left), -1},
                                                   {QKeySequence(Qt::Key_PageUp), -1}};
    for (const auto &[key, delta] : steps) {
        auto *sc = new QShortcut(key, this);
        sc->setEnabled(false);
        const int d = delta;
        connect(sc, &QShortcut::activated, this, [this, d] { presentationStep(d); });
        m_presentationKeys.push_back(sc);
    }
    auto *esc = new QShortcut(QKeySequence(Qt::Key_Escape), this);
    esc->setEnabled(false);
    connect(esc, &QShortcut::activated, this, [this] { setPresentationMode(false); });
    m_presentationKeys.push_back(esc);
}

void MainWindow::onAppearanceChanged()
{
    const Appearance &a = AppearanceManager::instance()->appearance();
    const int values[] = {int(a.theme), int(a.sequential), int(a.diverging)};
    for (size_t i = 0; i < m_appearanceGroups.size() && i < 3; ++i)
        for (QAction *act : m_appearanceGroups[i]->actions())
            act->setChecked(act->data().toInt() == values[i]);
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
    if (on == m_presenting)
        return;
    m_presenting = on;
    auto *am = AppearanceManager::instance();
    // the sentence editors and chips above the tabs (the central splitter's first widget)
    auto *split = qobject_cast<QSplitter *>(centralWidget());
    QWidget *editors = split ? split->widget(0) : nullptr;
    // labels and numbers at least 18 px tall while presenting (legibility.h, issue 14); set before
    // the appearance below restyles every plot
    setPresentationLegibility(on);
    if (on) {
        m_beforePresentation.appearance = am->appearance();
        m_beforePresentation.state = saveState();
        m_beforePresentation.maximized = isMaximized();
        m_beforePresentation.focus = QApplication::focusWidget();
        for (auto *dock : findChildren<QDockWidget *>()) // the Lesson column stays when a preset is in use
            dock->setVisible(dock->objectName() == QLatin1String("lessonDock") && !m_lesson->currentId().isEmpty());
        if (editors)
            editors->hide(); // one view fills the screen
        Appearance a = am->appearance();
        a.theme = Theme::HighContrast;
        a.fontScale = std::max(a.fontScale * 1.6, 1.6);
        am->setAppearance(a);
        m_beforePresentation.geometry = geometry();
        if (screen())
            setGeometry(screen()->geometry()); // also where no window manager honours full screen
        showFullScreen();
        if (m_tabs->currentWidget() == m_pipeline)
            m_pipeline->setCurrentStage(0); // a lesson starts from X
        // the step keys work at once: no editor keeps the focus (and the arrows) for itself
        if (m_tabs->currentWidget())
            m_tabs->currentWidget()->setFocus(Qt::OtherFocusReason);
    } else {
        am->setAppearance(m_beforePresentation.appearance);
        if (editors)
            editors->show();
        restoreState(m_beforePresentation.state);
        if (m_beforePresentation.maximized) {
            showMaximized();
        } else {
            showNormal();
            setGeometry(m_beforePresentation.geometry);
            // again once the layouts have taken the smaller text: until then their minimum sizes are
            // those of the large text, and the window came back wider than the screen (issue 14)
            const QRect g = m_beforePresentation.geometry;
            QTimer::singleShot(0, this, [this, g] {
                if (!m_presenting && !isMaximized())
                    setGeometry(g);
            });
        }
        if (m_beforePresentation.focus)
            m_beforePresentation.focus->setFocus(Qt::OtherFocusReason);
    }
    for (QShortcut *sc : m_presentationKeys)
        sc->setEnabled(on);
    const QSignalBlocker block(m_presentationAction);
    m_presentationAction->setChecked(on);
    emit presentationModeChanged(on);
}

void MainWindow::presentationStep(int delta)
{
    // On the pipeline: stage by stage (the last step shows them all), then on to the next view.
    if (m_tabs->currentWidget() == m_pipeline) {
        const int stage = m_pipeline->currentStage();
        if (delta > 0 && stage >= 0) {
            m_pipeline->nextStage();
            return;
        }
        if (delta < 0 && stage != 0) {
            m_pipeline->previousStage();
            return;
        }
    }
    // the views in teaching order; the step moves to the next visible one
    const int n = m_tabs->count();
    for (int k = 1; k <= n; ++k) {
        const int i = ((m_tabs->currentIndex() + delta * k) % n + n) % n;
        if (m_tabs->isTabVisible(i)) {
            m_tabs->setCurrentIndex(i);
            if (m_tabs->currentWidget() == m_pipeline)
                m_pipeline->setCurrentStage(delta > 0 ? 0 : -1);
            return;
        }
    }
}

bool MainWindow::showView(const QString &id)
{
    QWidget *w = tabForId(id);
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
            useBundled();
        break;
    }
    m_keyEdit->setPlainText(p->keySentence);
    m_queryEdit->setPlainText(p->sentence);
    m_controls->setSettings(p->settings);
    m_session->setHeadDisplay(p->display);
    if (p->display == HeadDisplay::One)
        m_session->setSelectedHead(p->head);
    m_session->setSelectedQuery(p->query);
    if (!showView(p->view))
        showView(SessionTab::Weights);
    m_lesson->showPreset(p);
    if (auto *dock = findChild<QDockWidget *>(QStringLiteral("lessonDock")))
        dock->show();
    m_applyingPreset = false;
    return true;
}

void MainWindow::exportPipelineStage()
{
    // one stage per figure: the one being stepped to, else the user picks (weights first)
    QStringList names;
    for (int i = 0; i < m_pipeline->stageCount(); ++i)
        names << QStringLiteral("%1. %2").arg(i + 1).arg(m_pipeline->stageName(i));
    if (names.isEmpty())
        return;
    int stage = m_pipeline->currentStage();
    if (stage < 0) {
        int preselect = 0;
        for (int i = 0; i < names.size(); ++i)
            if (m_pipeline->stageName(i).contains(QLatin1String("eights")))
                preselect = i;
        bool ok = false;
        const QString pick = QInputDialog::getItem(this, tr("Export a pipeline stage"), tr("Stage"), names, preselect,
                                                   false, &ok);
        if (!ok)
            return;
        stage = int(names.indexOf(pick));
    }
    if (QCustomPlot *plot = m_pipeline->stagePlot(stage))
        exportPlot(plot,
                   QStringLiteral("pipeline-%1").arg(m_pipeline->stageName(stage).toLower().replace(QLatin1Char(' '), QLatin1Char('-'))),
                   m_pipeline->stageFigureTitle(stage));
}

void MainWindow::exportComparePart()
{
    const QString pair = tr("A and B (one colour scale)");
    const QString second = m_compare->showsDifference() ? tr("Difference A − B") : tr("The focus word in A and B");
    bool ok = false;
    const QString pick = QInputDialog::getItem(this, tr("Export the comparison"), tr("Figure"), {pair, second}, 0, false, &ok);
    if (!ok)
        return;
    if (pick == pair)
        exportPlot(m_compare->pairPlot(), QStringLiteral("compare"));
    else
        exportPlot(m_compare->showsDifference() ? m_compare->differencePlot() : m_compare->focusPlot(),
                   m_compare->showsDifference() ? QStringLiteral("compare-difference") : QStringLiteral("compare-focus"));
}

void MainWindow::setSentence(const QString &text) { m_queryEdit->setPlainText(text); }

void MainWindow::setKeySentence(const QString &text) { m_keyEdit->setPlainText(text); }

void MainWindow::applySide(const CompareSide &side)
{
    if (side.table && side.table != m_session->table())
        setEmbeddingTable(side.table, side.tableDescription.isEmpty() ? describeTable(*side.table) : side.tableDescription);
    m_controls->setSettings(side.settings);
    setKeySentence(side.keySentence);
    setSentence(side.sentence);
}

void MainWindow::startComparison(const ComparisonSpec &spec)
{
    applySide(spec.a);
    if (spec.selectedQuery >= 0)
        m_session->setSelectedQuery(spec.selectedQuery);
    m_compare->loadSpec(spec);
    m_tabs->setCurrentWidget(m_compare);
}

void MainWindow::setEmbeddingTable(std::shared_ptr<const EmbeddingTable> table, const QString &description)
{
    const QString seed = seedTableName(table);
    setTableFrom(std::move(table), description, seed.isEmpty() ? TableKind::Unsaved : TableKind::Seed, seed);
}

void MainWindow::setTableFrom(std::shared_ptr<const EmbeddingTable> table, const QString &description, TableKind kind,
                              const QString &pathOrName)
{
    m_tableKind = kind;
    m_tablePath = kind == TableKind::File ? pathOrName : QString();
    m_tableName = kind == TableKind::Seed ? pathOrName : QString();
    m_controls->setDModel(table ? table->dim() : 0);
    m_controls->setTableDescription(description);
    m_session->setTable(std::move(table));
    updateModified();
}

void MainWindow::useBundled()
{
    auto t = std::make_shared<EmbeddingTable>();
    const Status st = loadBundledEmbeddings(*t);
    if (!st.ok()) {
        m_controls->setTableDescription(QString::fromStdString(st.message));
        return;
    }
    setTableFrom(t, describeTable(*t), TableKind::Bundled, QString());
}

bool MainWindow::loadEmbeddingsFile(const QString &path, QString *error)
{
    auto t = std::make_shared<EmbeddingTable>();
    const Status st = loadEmbeddings(path.toStdString(), *t);
    if (!st.ok() || t->empty()) {
        if (error)
            *error = st.ok() ? tr("%1: the file holds no vectors").arg(path) : QString::fromStdString(st.message);
        return false;
    }
    setTableFrom(t, describeTable(*t), TableKind::File, QFileInfo(path).absoluteFilePath());
    return true;
}

void MainWindow::startLoadEmbeddings()
{
    if (m_loading)
        return;
    QSettings settings;
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Load embeddings"), settings.value(QStringLiteral("embeddings/lastDir")).toString(),
        tr("Word vectors (*.txt *.vec *.bin *.avec);;All files (*)"));
    if (path.isEmpty())
        return;
    settings.setValue(QStringLiteral("embeddings/lastDir"), QFileInfo(path).absolutePath());
    m_loading = true;
    auto *dialog = new QProgressDialog(tr("Reading %1…").arg(QFileInfo(path).fileName()), tr("Cancel"), 0, 1000, this);
    dialog->setWindowModality(Qt::WindowModal);
    dialog->setMinimumDuration(300);
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    auto fraction = std::make_shared<std::atomic<int>>(0);
    connect(dialog, &QProgressDialog::canceled, this, [cancel] { cancel->store(true); });
    auto *poll = new QTimer(dialog);
    connect(poll, &QTimer::timeout, dialog, [dialog, fraction] { dialog->setValue(fraction->load()); });
    poll->start(100);
    auto *watcher = new QFutureWatcher<std::pair<Status, std::shared_ptr<EmbeddingTable>>>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, dialog, path] {
        const auto [st, table] = watcher->result();
        watcher->deleteLater();
        dialog->deleteLater();
        m_loading = false;
        if (st.code == StatusCode::Cancelled)
            return;
        if (!st.ok() || !table || table->empty()) {
            QMessageBox::warning(this, tr("Cannot load embeddings"),
                                 tr("%1\n\nThe current table stays in use.")
                                     .arg(st.ok() ? tr("%1 holds no vectors").arg(path)
                                                  : QString::fromStdString(st.message)));
            return;
        }
        setTableFrom(table, describeTable(*table), TableKind::File, QFileInfo(path).absoluteFilePath());
    });
    watcher->setFuture(QtConcurrent::run([path, cancel, fraction] {
        auto t = std::make_shared<EmbeddingTable>();
        const Status st = loadEmbeddings(path.toStdString(), *t, EmbeddingFormat::Auto, [&](double f) {
            if (f >= 0)
                fraction->store(int(f * 1000));
            return !cancel->load();
        });
        return std::make_pair(st, t);
    }));
}

bool MainWindow::loadStackWeightsFile(const QString &path, QString *error)
{
    auto w = std::make_shared<StackWeights<float>>();
    int depth = 0;
    if (!attnviz::ui::loadStackWeightsFile(path, *w, depth, error))
        return false;
    m_stackWeightsPath = QFileInfo(path).absoluteFilePath();
    m_controls->stackControls()->setLoadedWeights(w, depth, QFileInfo(path).fileName());
    return true;
}

bool MainWindow::loadProjectionsFile(const QString &path, QString *error)
{
    auto p = std::make_shared<Projections<float>>();
    const Status st = attnviz::ui::loadProjectionsFile(path, *p);
    if (!st.ok()) {
        if (error)
            *error = QString::fromStdString(st.message);
        return false;
    }
    m_projectionsPath = QFileInfo(path).absoluteFilePath();
    m_controls->setLoadedProjections(p, QFileInfo(path).fileName());
    return true;
}

void MainWindow::onTokenClicked(bool keyChips, int index)
{
    const SnapshotPtr s = m_session->snapshot();
    const bool cross = s && s->cross;
    if (keyChips != cross)
        return; // in cross-attention only the key sentence's tokens can be padding
    m_session->togglePadding(index);
    ComputeSettings st = m_controls->settings();
    if (st.mask == MaskChoice::None || st.mask == MaskChoice::Custom)
        st.mask = MaskChoice::Padding;
    else if (st.mask == MaskChoice::Causal)
        st.mask = MaskChoice::CausalPadding;
    m_controls->setSettings(st);
    updateModified();
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
    if (s->stack)
        m_controls->stackControls()->setShownLayer(s->layer);
    m_tabs->setTabVisible(m_tabs->indexOf(m_layerGrid), s->settings.stack.enabled());
    m_tabs->setTabVisible(m_tabs->indexOf(m_residual), s->settings.stack.enabled());
    onSelection(m_session->shownHead(), m_session->selectedQuery());

    QStringList q, k;
    for (const Token &t : s->query.tokens)
        q << tokenText(t);
    m_queryChips->setTokens(q, s->query.unknown, s->totalQueryTokens);
    const bool padding = s->settings.mask == MaskChoice::Padding || s->settings.mask == MaskChoice::CausalPadding;
    if (s->cross) {
        for (const Token &t : s->key.tokens)
            k << tokenText(t);
        m_keyChips->setTokens(k, s->key.unknown, s->totalKeyTokens);
        m_keyChips->setPadded(s->paddedKeys, padding);
        m_queryChips->setPadded({}, false);
    } else {
        m_queryChips->setPadded(s->paddedKeys, padding);
    }

    if (s->hasResult()) {
        m_status->setText(tr("%L1 tokens%2 · %3 heads · d_model %4 · d_head %5 · %6: %7 · %8 ms")
                              .arg(s->tq())
                              .arg(s->cross ? tr(" × %L1 keys").arg(s->tk()) : QString())
                              .arg(s->result.numHeads)
                              .arg(s->result.dModel)
                              .arg(s->result.dHead)
                              .arg(s->backendName, s->device)
                              .arg(s->computeMs, 0, 'f', s->computeMs < 10 ? 2 : 1));
        if (s->stack)
            m_status->setText(m_status->text() + tr(" · layer %1 of %2").arg(s->layer).arg(s->stack->layers.size()));
    } else {
        m_status->setText(s->message.left(160));
    }
    QStringList notices;
    if (s->truncated())
        notices << tr("%L1 tokens pasted: the views show the first %L2 (the live limit for %3 heads keeps the "
                      "t × t weights of every head in memory).")
                       .arg(std::max(s->totalQueryTokens, s->totalKeyTokens))
                       .arg(s->tq())
                       .arg(s->settings.numHeads);
    if (!notices.isEmpty()) {
        m_notice->setText(notices.join(QLatin1Char('\n')));
        m_notice->setVisible(true);
    } else if (!m_notice->text().contains(QChar::ReplacementCharacter)) {
        m_notice->setVisible(false);
    }
    emit viewsUpdated(s->generation);
}

void MainWindow::onSelection(int head, int query)
{
    m_heatmap->setSelection(head, query);
    m_grid->setSelection(head, query);
    m_embeddings->setSelection(head, query);
    m_lines->setSelection(head, query);
    m_row->setSelection(head, query);
    m_layerGrid->setSelection(head, query);
    m_residual->setSelection(head, query);
    m_pipeline->setSelection(head, query);
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

void MainWindow::exportFigure(ExportView view) { exportPlot(plotFor(view), exportViewName(view)); }

void MainWindow::exportPlot(QCustomPlot *plot, const QString &name, const QString &titleLine)
{
    QSettings settings;
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Export %1 view").arg(name));
    auto *form = new QFormLayout(&dialog);
    auto *w = new QSpinBox(&dialog);
    w->setRange(16, 20000);
    w->setValue(settings.value(QStringLiteral("export/width"), 1600).toInt());
    auto *h = new QSpinBox(&dialog);
    h->setRange(16, 20000);
    h->setValue(settings.value(QStringLiteral("export/height"), 1000).toInt());
    auto *dpi = new QDoubleSpinBox(&dialog);
    dpi->setRange(10, 2400);
    dpi->setValue(settings.value(QStringLiteral("export/dpi"), 144).toDouble());
    form->addRow(tr("Width (px; points for SVG/PDF)"), w);
    form->addRow(tr("Height"), h);
    form->addRow(tr("DPI (PNG)"), dpi);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    if (dialog.exec() != QDialog::Accepted)
        return;
    settings.setValue(QStringLiteral("export/width"), w->value());
    settings.setValue(QStringLiteral("export/height"), h->value());
    settings.setValue(QStringLiteral("export/dpi"), dpi->value());
    const QString path = QFileDialog::getSaveFileName(this, tr("Export figure"),
                                                      QStringLiteral("attnviz-%1.png").arg(name),
                                                      tr("PNG image (*.png);;SVG (*.svg);;PDF (*.pdf)"));
    if (path.isEmpty())
        return;
    QString error;
    if (!saveFigure(plot, path, {w->value(), h->value(), dpi->value(), titleLine}, &error))
        QMessageBox::warning(this, tr("Export failed"), error);
    else
        statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

void MainWindow::exportMatrices()
{
    const SnapshotPtr s = m_session->snapshot();
    if (!s || !s->hasResult()) {
        QMessageBox::information(this, tr("Nothing to export"), s ? s->message : tr("Nothing computed yet."));
        return;
    }
    const ExportView view = currentView();
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export matrices"), QStringLiteral("attnviz-%1.csv").arg(exportViewName(view)),
        tr("CSV (*.csv);;NumPy (*.npy);;JSON (*.json)"));
    if (path.isEmpty())
        return;
    QString error;
    // the lines view's numbers: its one matrix, or every head when it overlays them
    const ExportView data = view != ExportView::Lines ? view
        : m_session->headDisplay() == HeadDisplay::All ? ExportView::Grid
                                                       : ExportView::Weights;
    if (!saveMatrices(*s, data, m_session->shownHead(), m_session->selectedQuery(), path, &error))
        QMessageBox::warning(this, tr("Export failed"), error);
    else
        statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

// Sessions ------------------------------------------------------------------------------------------

QString MainWindow::tabId() const { return currentViewId(); }

QWidget *MainWindow::tabForId(const QString &id) const
{
    for (int i = 0; i < m_tabs->count(); ++i)
        if (m_tabs->widget(i)->objectName() == id + QLatin1String("View"))
            return m_tabs->widget(i);
    return m_heatmap;
}

SessionState MainWindow::captureSession() const
{
    SessionState s;
    s.sentence = m_queryEdit->toPlainText();
    s.keySentence = m_keyEdit->toPlainText();
    s.paddedKeys = m_session->paddedKeys();
    s.customMask = m_session->customMask();
    s.settings = m_controls->settings();
    s.tableKind = m_tableKind;
    s.tablePath = m_tablePath;
    s.tableName = m_tableName;
    s.projectionsFile = m_projectionsPath;
    s.stackWeightsFile = m_stackWeightsPath;
    s.tab = tabId();
    s.headDisplay = m_session->headDisplay();
    s.selectedHead = m_session->selectedHead();
    s.selectedQuery = m_session->selectedQuery();
    s.layer = m_session->selectedLayer();
    s.showNumbers = m_controls->showNumbers();
    s.linesThreshold = m_lines->threshold();
    s.linesScaleRows = m_lines->scaleRows();
    s.lesson = m_lesson->currentId();
    s.appearance = AppearanceManager::instance()->appearance();
    if (m_compare->hasSideB()) {
        const CompareSide b = m_compare->sideB();
        s.compare.present = true;
        s.compare.sentence = b.sentence;
        s.compare.keySentence = b.keySentence;
        s.compare.settings = b.settings;
        s.compare.settings.loadedProjections = nullptr;
        s.compare.seedTable = b.table ? seedTableName(b.table) : QString();
    }
    return s;
}

void MainWindow::applySession(const SessionState &in, QStringList *problems)
{
    QStringList lines;
    SessionState s = in;
    const auto inUse = [this] {
        const auto t = m_session->table();
        return t ? tr("the table in use stays: %1").arg(describeTable(*t)) : tr("no table is in use");
    };

    // The table.
    switch (s.tableKind) {
    case TableKind::Unsaved: break;
    case TableKind::Bundled:
        if (m_tableKind == TableKind::Bundled)
            break;
        if (!hasBundledEmbeddings())
            lines << tr("table: this build has no bundled word vectors; %1").arg(inUse());
        else
            useBundled();
        break;
    case TableKind::File: {
        const QString path = QFileInfo(s.tablePath).absoluteFilePath();
        if (m_tableKind == TableKind::File && m_tablePath == path)
            break;
        QString error;
        if (!QFileInfo::exists(path))
            lines << tr("table.path: the embeddings file %1 is missing; %2").arg(path, inUse());
        else if (!loadEmbeddingsFile(path, &error))
            lines << tr("table.path: %1; %2").arg(error, inUse());
        break;
    }
    case TableKind::Seed:
        if (const auto t = seedTableByName(s.tableName))
            setTableFrom(t, describeTable(*t), TableKind::Seed, s.tableName);
        break;
    }

    // The sentences (a new key sentence clears the padding and the custom mask: set before them).
    setKeySentence(s.keySentence);
    setSentence(s.sentence);

    // The weight files, before the settings that select them.
    if (!s.projectionsFile.isEmpty()) {
        const QString path = QFileInfo(s.projectionsFile).absoluteFilePath();
        QString error;
        const bool ok = path == m_projectionsPath
            || (QFileInfo::exists(path) ? loadProjectionsFile(path, &error)
                                        : (error = tr("the file %1 is missing").arg(path), false));
        if (!ok) {
            lines << tr("projectionsFile: %1; %2").arg(error,
                                                        s.settings.projection == ProjectionMode::File
                                                            ? tr("identity projections are used instead")
                                                            : tr("no projections file is loaded"));
            if (s.settings.projection == ProjectionMode::File)
                s.settings.projection = ProjectionMode::Identity;
            m_projectionsPath.clear();
            m_controls->setLoadedProjections(nullptr, QString());
        }
    } else {
        if (s.settings.projection == ProjectionMode::File) {
            lines << tr("settings.projection: \"file\" but the session names no projectionsFile; identity "
                        "projections are used instead");
            s.settings.projection = ProjectionMode::Identity;
        }
        if (!m_projectionsPath.isEmpty()) {
            m_projectionsPath.clear();
            m_controls->setLoadedProjections(nullptr, QString());
        }
    }
    if (!s.stackWeightsFile.isEmpty()) {
        const QString path = QFileInfo(s.stackWeightsFile).absoluteFilePath();
        QString error;
        const bool ok = path == m_stackWeightsPath
            || (QFileInfo::exists(path) ? loadStackWeightsFile(path, &error)
                                        : (error = tr("the file %1 is missing").arg(path), false));
        if (!ok) {
            lines << tr("stackWeightsFile: %1; %2").arg(error,
                                                         s.settings.stack.source == StackWeightsSource::File
                                                             ? tr("seeded stack weights are used instead")
                                                             : tr("no stack weights file is loaded"));
            if (s.settings.stack.source == StackWeightsSource::File)
                s.settings.stack.source = StackWeightsSource::Seeded;
            m_stackWeightsPath.clear();
            m_controls->stackControls()->setLoadedWeights(nullptr, 0, QString());
        }
    } else {
        if (s.settings.stack.source == StackWeightsSource::File) {
            lines << tr("settings.stack.source: \"file\" but the session names no stackWeightsFile; seeded "
                        "weights are used instead");
            s.settings.stack.source = StackWeightsSource::Seeded;
        }
        if (!m_stackWeightsPath.isEmpty()) {
            m_stackWeightsPath.clear();
            m_controls->stackControls()->setLoadedWeights(nullptr, 0, QString());
        }
    }

    // Every control (the loaded weights stay those just read), the masks, the view.
    s.settings.loadedProjections = nullptr;
    s.settings.stack.loaded = nullptr;
    m_controls->setSettings(s.settings);
    m_session->setPaddedKeys(s.paddedKeys);
    m_session->setCustomMask(s.customMask);
    m_controls->setShowNumbers(s.showNumbers);
    if (s.selectedHead >= s.settings.numHeads)
        lines << tr("view.selectedHead: %1 is not a head of %2; head 0 is shown").arg(s.selectedHead).arg(s.settings.numHeads);
    else
        m_session->setSelectedHead(s.selectedHead);
    m_session->setHeadDisplay(s.headDisplay);
    m_session->setSelectedQuery(s.selectedQuery);
    if (s.layer >= s.settings.stack.depth)
        lines << tr("view.layer: %1 is not a layer of a %2-layer stack; layer 0 is shown").arg(s.layer).arg(s.settings.stack.depth);
    else {
        m_session->setSelectedLayer(s.layer);
        m_controls->stackControls()->setShownLayer(s.layer);
    }
    QWidget *tab = tabForId(s.tab);
    if (m_tabs->isTabVisible(m_tabs->indexOf(tab)))
        m_tabs->setCurrentWidget(tab);
    else {
        m_tabs->setCurrentWidget(m_heatmap);
        lines << tr("view.tab: \"%1\" is a stack view and the session has no stack (depth 1); the weights are shown")
                     .arg(s.tab);
    }
    m_lines->setThreshold(s.linesThreshold);
    m_lines->setScaleRows(s.linesScaleRows);
    // The lesson text, the appearance, the Compare tab's side B.
    if (s.lesson.isEmpty())
        m_lesson->showPreset(nullptr);
    else if (const Preset *p = findPreset(s.lesson)) {
        m_lesson->showPreset(p);
        if (auto *dock = findChild<QDockWidget *>(QStringLiteral("lessonDock")))
            dock->show();
    }
    else
        lines << tr("lesson: this attnviz has no preset \"%1\"; the Lesson column is left empty").arg(s.lesson);
    AppearanceManager::instance()->setAppearance(s.appearance);
    if (s.compare.present) {
        CompareSide b;
        b.sentence = s.compare.sentence;
        b.keySentence = s.compare.keySentence;
        b.settings = s.compare.settings;
        b.table = seedTableByName(s.compare.seedTable);
        if (b.settings.projection == ProjectionMode::File) {
            lines << tr("compare.settings.projection: side B cannot load a projections file; identity is used");
            b.settings.projection = ProjectionMode::Identity;
        }
        m_compare->setSideB(b);
    }
    updateModified();
    if (problems)
        *problems << lines;
}

bool MainWindow::openSession(const QString &path, QString *report)
{
    const QString name = QFileInfo(path).fileName();
    const auto fail = [&](const QString &why) {
        const QString text = tr("could not open %1: %2").arg(path, why);
        statusBar()->showMessage(text);
        if (report)
            *report = text;
        return false;
    };
    QFile f(path);
    if (QFileInfo(path).isDir())
        return fail(tr("it is a folder"));
    if (!f.open(QIODevice::ReadOnly))
        return fail(f.errorString());
    constexpr qint64 kMaxBytes = 16 << 20;
    if (f.size() > kMaxBytes)
        return fail(tr("%L1 bytes is far too large for a session").arg(f.size()));
    const QByteArray data = f.readAll();
    f.close();
    QJsonParseError pe{};
    const QJsonDocument doc = QJsonDocument::fromJson(data, &pe);
    if (pe.error != QJsonParseError::NoError)
        return fail(tr("%1 at offset %2").arg(pe.errorString()).arg(pe.offset));
    if (!doc.isObject())
        return fail(tr("not an attnviz session (the file holds no JSON object)"));
    SessionState s; // the defaults: what an older file without a section gets
    QStringList problems;
    if (!sessionFromJson(doc.object(), s, &problems))
        return fail(problems.join(QStringLiteral("; ")));
    // Paths in the file may be relative to the file's folder.
    const QDir dir = QFileInfo(path).absoluteDir();
    for (QString *p : {&s.tablePath, &s.projectionsFile, &s.stackWeightsFile})
        if (!p->isEmpty())
            *p = QDir::cleanPath(dir.absoluteFilePath(*p));
    applySession(s, &problems);
    m_sessionPath = QFileInfo(path).absoluteFilePath();
    m_saveAsks = !problems.isEmpty(); // saving it back would lose what could not be read
    markClean();
    addRecent(m_sessionPath);
    QString text;
    if (problems.isEmpty()) {
        text = tr("Opened %1").arg(path);
    } else {
        text = tr("Opened %1; what could not be opened:\n• %2").arg(path, problems.join(QStringLiteral("\n• ")));
        showProblems(tr("Opened %1 with problems").arg(name), text);
    }
    statusBar()->showMessage(QString(text).replace(QLatin1Char('\n'), QLatin1Char(' ')));
    if (report)
        *report = text;
    return true;
}

bool MainWindow::saveSession(const QString &path, QString *error)
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
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return fail(f.errorString());
    const QByteArray data = QJsonDocument(sessionToJson(captureSession())).toJson(QJsonDocument::Indented);
    if (f.write(data) != data.size() || !f.commit())
        return fail(f.errorString());
    m_sessionPath = QFileInfo(path).absoluteFilePath();
    m_saveAsks = false;
    markClean();
    addRecent(m_sessionPath);
    statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
    return true;
}

bool MainWindow::restoreLastSession(QString *report)
{
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    const QString json = settings.value(QStringLiteral("session/last")).toString();
    if (json.isEmpty())
        return false;
    const auto fail = [&](const QString &why) {
        const QString text = tr("could not restore the last session: %1").arg(why);
        statusBar()->showMessage(text);
        if (report)
            *report = text;
        return false;
    };
    QJsonParseError pe{};
    const QJsonDocument doc = QJsonDocument::fromJson(json.toUtf8(), &pe);
    if (pe.error != QJsonParseError::NoError)
        return fail(tr("%1 at offset %2").arg(pe.errorString()).arg(pe.offset));
    SessionState s;
    QStringList problems;
    if (!sessionFromJson(doc.object(), s, &problems))
        return fail(problems.join(QStringLiteral("; ")));
    applySession(s, &problems);
    const QString path = settings.value(QStringLiteral("session/lastPath")).toString();
    m_sessionPath = !path.isEmpty() && QFileInfo::exists(path) ? path : QString();
    m_saveAsks = !problems.isEmpty();
    markClean();
    m_forcedModified = settings.value(QStringLiteral("session/lastModified")).toBool() || (!path.isEmpty() && m_sessionPath.isEmpty());
    updateModified();
    QString text = tr("Restored the last session");
    if (!problems.isEmpty()) {
        text += tr("; what could not be restored:\n• %1").arg(problems.join(QStringLiteral("\n• ")));
        showProblems(tr("Restored the last session with problems"), text);
    }
    statusBar()->showMessage(QString(text).replace(QLatin1Char('\n'), QLatin1Char(' ')), 8000);
    if (report)
        *report = text;
    return true;
}

QString MainWindow::sessionName() const
{
    return m_sessionPath.isEmpty() ? tr("Untitled") : QFileInfo(m_sessionPath).fileName();
}

void MainWindow::updateTitle()
{
    setWindowTitle(tr("%1[*] — attnviz").arg(sessionName()));
}

void MainWindow::markClean()
{
    m_clean = captureSession();
    m_forcedModified = false;
    setWindowModified(false);
    updateTitle();
}

void MainWindow::updateModified()
{
    setWindowModified(m_forcedModified || captureSession() != m_clean);
}

bool MainWindow::maybeSave()
{
    if (!isWindowModified())
        return true;
    switch (m_savePrompt(sessionName())) {
    case SaveAnswer::Save: return saveInteractive(false);
    case SaveAnswer::Discard: m_discarded = true; return true;
    case SaveAnswer::Cancel: return false;
    }
    return false;
}

bool MainWindow::saveInteractive(bool saveAs)
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
        QMessageBox::warning(this, tr("Cannot save the session"), error);
        return false;
    }
    return true;
}

bool MainWindow::newSession()
{
    m_discarded = false;
    if (!maybeSave())
        return false;
    SessionState fresh;
    if (!hasBundledEmbeddings())
        fresh.tableKind = TableKind::Unsaved; // keep the loaded table
    applySession(fresh, nullptr);
    m_sessionPath.clear();
    m_saveAsks = false;
    markClean();
    statusBar()->showMessage(tr("New session"), 3000);
    return true;
}

bool MainWindow::openSessionInteractive(const QString &given)
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

QStringList MainWindow::recentSessions() const
{
    return QSettings().value(QStringLiteral("recentSessions")).toStringList();
}

void MainWindow::addRecent(const QString &path)
{
    QStringList recent = recentSessions();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    QSettings().setValue(QStringLiteral("recentSessions"), recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu()
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
            statusBar()->showMessage(tr("Removed from the recent sessions (missing): %1").arg(gone.join(QStringLiteral(", "))), 8000);
            rebuildRecentMenu();
        });
    }
}

void MainWindow::showProblems(const QString &title, const QString &text)
{
    auto *box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("sessionProblems"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setModal(false); // a report to read beside the window, not a question
    box->show();
}

} // namespace attnviz::ui
