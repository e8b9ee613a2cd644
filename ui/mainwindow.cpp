// SPDX-License-Identifier: GPL-3.0-or-later
#include "mainwindow.h"

#include "fallbackbackend.h"

#include "controlpanel.h"
#include "embeddingview.h"
#include "headgridview.h"
#include "heatmapview.h"
#include "layergridview.h"
#include "linesview.h"
#include "livecompute.h"
#include "livesession.h"
#include "residualview.h"
#include "rowview.h"
#include "sentenceedit.h"
#include "stackcompute.h"
#include "stackcontrols.h"
#include "tokenchipsview.h"

#include "bundledvectors.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QProgressDialog>
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
    setWindowTitle(tr("attnviz — attention, live"));

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
    m_tabs = new QTabWidget(this);
    m_tabs->addTab(m_heatmap, tr("Weights"));
    m_tabs->addTab(m_grid, tr("All heads"));
    m_tabs->addTab(m_embeddings, tr("Contextual embeddings"));
    m_lines = new LinesView(this);
    m_tabs->addTab(m_lines, tr("Lines"));
    m_layerGrid = new LayerGridView(this); // stack mode (depth >= 2) only
    m_residual = new ResidualView(this);
    m_tabs->addTab(m_layerGrid, tr("Layers × heads"));
    m_tabs->addTab(m_residual, tr("Residual stream"));
    m_tabs->setTabVisible(m_tabs->indexOf(m_layerGrid), false);
    m_tabs->setTabVisible(m_tabs->indexOf(m_residual), false);

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
        m_heatmap->setCustomMaskEditing(s.mask == MaskChoice::Custom);
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
    connect(m_residual, &ResidualView::querySelected, m_session, &LiveSession::setSelectedQuery);
    connect(m_controls->stackControls(), &StackControls::layerChanged, m_session, &LiveSession::setSelectedLayer);
    connect(m_controls->stackControls(), &StackControls::loadWeightsRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Load stack weights"), QString(),
                                                          tr("safetensors, GPT-2 names (*.safetensors);;All files (*)"));
        QString error;
        if (!path.isEmpty() && !loadStackWeightsFile(path, &error))
            QMessageBox::warning(this, tr("Cannot load weights"), tr("%1\n\nThe current weights stay in use.").arg(error));
    });
    connect(m_queryChips, &TokenChipsView::tokenClicked, this, [this](int i) { onTokenClicked(false, i); });
    connect(m_keyChips, &TokenChipsView::tokenClicked, this, [this](int i) { onTokenClicked(true, i); });

    buildMenus();

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
}

MainWindow::~MainWindow() = default;

void MainWindow::closeEvent(QCloseEvent *e)
{
    QSettings().setValue(QStringLiteral("window/geometry"), saveGeometry());
    QMainWindow::closeEvent(e);
}

void MainWindow::buildMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
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
        else
            exportFigure(currentView());
    });
    file->addAction(tr("Export &all heads…"), this, [this] { exportFigure(ExportView::Grid); });
    file->addAction(tr("Export &matrices (CSV, NPY, JSON)…"), this, &MainWindow::exportMatrices);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
}

void MainWindow::setSentence(const QString &text) { m_queryEdit->setPlainText(text); }

void MainWindow::setKeySentence(const QString &text) { m_keyEdit->setPlainText(text); }

void MainWindow::setEmbeddingTable(std::shared_ptr<const EmbeddingTable> table, const QString &description)
{
    m_controls->setDModel(table ? table->dim() : 0);
    m_controls->setTableDescription(description);
    m_session->setTable(std::move(table));
}

void MainWindow::useBundled()
{
    auto t = std::make_shared<EmbeddingTable>();
    const Status st = loadBundledEmbeddings(*t);
    if (!st.ok()) {
        m_controls->setTableDescription(QString::fromStdString(st.message));
        return;
    }
    setEmbeddingTable(t, describeTable(*t));
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
    setEmbeddingTable(t, describeTable(*t));
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
        setEmbeddingTable(table, describeTable(*table));
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
}

void MainWindow::onSnapshot(SnapshotPtr s)
{
    m_heatmap->setSnapshot(s);
    m_grid->setSnapshot(s);
    m_embeddings->setSnapshot(s);
    m_lines->setSnapshot(s);
    m_row->setSnapshot(s);
    m_layerGrid->setSnapshot(s);
    m_residual->setSnapshot(s);
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

void MainWindow::exportPlot(QCustomPlot *plot, const QString &name)
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
    if (!saveFigure(plot, path, {w->value(), h->value(), dpi->value()}, &error))
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

} // namespace attnviz::ui
