// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/alignmentview.h"

#include "files/outputfile.h"
#include "style/plotstyle.h"
#include "views/plotfit.h"
#include "views/readsplot.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

namespace {

const QColor kAlignmentMarkColour(230, 80, 40); // the marked cells' squares
const QColor kAlignmentBestLayer(255, 226, 140); // the sweep's best layer

QString accuracyText(double v) { return std::isnan(v) ? QStringLiteral("–") : QStringLiteral("%1 %").arg(100.0 * v, 0, 'f', 0); }

QString alignmentCsvField(QString s)
{
    if (s.contains(QLatin1Char(',')) || s.contains(QLatin1Char('"')) || s.contains(QLatin1Char('\n')))
        s = QLatin1Char('"') + s.replace(QLatin1Char('"'), QStringLiteral("\"\"")) + QLatin1Char('"');
    return s;
}

// A word's label: its pieces decoded by the model where it has a tokenizer (byte-fallback pieces such
// as "<0x38>" and byte-level BPE's "Ã¤" read as text), else, or where the decoder cannot spell a
// piece (Marian decodes with the target's SentencePiece model), the pieces joined.
QStringList wordLabels(const std::vector<AlignmentWord> &words, const std::vector<TraceToken> &tokens, const Model *model)
{
    QStringList out;
    for (const AlignmentWord &w : words) {
        QString label;
        if (model && !tokens[size_t(w.first)].special) {
            std::vector<int> ids;
            for (int i = w.first; i < w.last; ++i)
                if (tokens[size_t(i)].id >= 0)
                    ids.push_back(tokens[size_t(i)].id);
            if (int(ids.size()) == w.last - w.first)
                label = QString::fromStdString(model->decode(ids)).trimmed();
            // a piece the decoder cannot spell (SentencePiece's ⁇, a broken byte sequence): the pieces
            if (label.contains(QChar(0x2047)) || label.contains(QChar(0xFFFD)))
                label.clear();
        }
        out << (label.isEmpty() ? QString::fromStdString(w.label) : label);
    }
    return out;
}

} // namespace

AlignmentView::AlignmentView(QWidget *parent) : DeferredView(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_refusal = new QLabel(this);
    m_refusal->setObjectName(QStringLiteral("alignmentRefusal"));
    m_refusal->setWordWrap(true);
    m_refusal->setContentsMargins(6, 4, 6, 4);
    layout->addWidget(m_refusal);

    m_body = new QWidget(this);
    auto *body = new QVBoxLayout(m_body);
    body->setContentsMargins(6, 4, 6, 2);
    body->setSpacing(3);
    auto *row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Layer:"), m_body));
    m_layer = new QComboBox(m_body);
    m_layer->setObjectName(QStringLiteral("alignmentLayer"));
    m_layer->setToolTip(tr("The cross-attention layer drawn, or the mean over every layer"));
    row->addWidget(m_layer);
    row->addWidget(new QLabel(tr("Head:"), m_body));
    m_head = new QComboBox(m_body);
    m_head->setObjectName(QStringLiteral("alignmentHead"));
    m_head->setToolTip(tr("The head drawn, or the mean over the layer's heads"));
    row->addWidget(m_head);
    m_clear = new QPushButton(tr("Clear marks"), m_body);
    m_clear->setObjectName(QStringLiteral("alignmentClear"));
    m_clear->setToolTip(tr("Take every marked cell off"));
    row->addWidget(m_clear);
    m_csv = new QPushButton(tr("CSV…"), m_body);
    m_csv->setObjectName(QStringLiteral("alignmentCsv"));
    m_csv->setToolTip(tr("Save the word matrix as CSV (File ▸ Export current view writes the figure)"));
    row->addWidget(m_csv);
    row->addStretch(1);
    body->addLayout(row);
    m_hint = new QLabel(m_body);
    m_hint->setObjectName(QStringLiteral("alignmentHint"));
    m_hint->setWordWrap(true);
    m_hint->setText(tr("Source words across, target words down; ● each row's largest weight. Click a cell to mark the "
                       "source word you expect a target word to align with (□; again: off)."));
    body->addWidget(m_hint);

    auto *split = new QHBoxLayout;
    m_plot = new QCustomPlot(m_body);
    m_plot->setObjectName(QStringLiteral("alignmentPlot"));
    m_plot->setMinimumHeight(200);
    QFont titleFont = font();
    titleFont.setBold(true);
    const TokenHeatmap h = makeTokenHeatmap(m_plot, tr("source word"), tr("target word"), tr("weight"), titleFont);
    m_map = h.map;
    m_scale = h.scale;
    m_title = h.title;
    fitValueTicks(m_scale->axis());
    m_argmaxGraph = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis);
    m_argmaxGraph->setLineStyle(QCPGraph::lsNone);
    m_argmaxGraph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::white, 2), QBrush(Qt::black), 9));
    m_marksGraph = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis);
    m_marksGraph->setLineStyle(QCPGraph::lsNone);
    m_marksGraph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, QPen(kAlignmentMarkColour, 2.5), Qt::NoBrush, 17));
    titleTooltip(m_plot, m_title, [this] { return m_titleText; });
    relabelAfterLayout(m_plot, this, [this] {
        const QString fitted = fittedTitle(m_plot, m_title, m_titleText, 0.2);
        const bool titleChanged = fitted != m_title->text();
        m_title->setText(fitted);
        const bool x = labelTokenAxis(m_plot->xAxis, m_colLabels);
        const bool y = labelTokenAxis(m_plot->yAxis, m_rowLabels);
        return x || y || titleChanged;
    });
    split->addWidget(m_plot, 3);

    auto *side = new QVBoxLayout;
    m_note = new QLabel(m_body);
    m_note->setObjectName(QStringLiteral("alignmentNote"));
    m_note->setWordWrap(true);
    side->addWidget(m_note);
    m_table = new QTableWidget(0, 2, m_body);
    m_table->setObjectName(QStringLiteral("alignmentSweep"));
    m_table->setHorizontalHeaderLabels({tr("mean"), tr("best head")});
    m_table->horizontalHeaderItem(0)->setToolTip(
        tr("Alignment accuracy of the layer's mean over heads: the share of marked target words whose largest weight is the "
           "marked source word"));
    m_table->horizontalHeaderItem(1)->setToolTip(tr("The layer's head that scores best alone, and its accuracy"));
    m_table->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_table->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents); // as wide as its columns
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setToolTip(tr("Click a layer to draw it"));
    side->addWidget(m_table, 1);
    split->addLayout(side, 1);
    body->addLayout(split, 1);
    layout->addWidget(m_body, 1);

    cellInteraction(
        m_plot, this,
        [this](const QPointF &pos, int &r, int &c) {
            if (!hasMatrix() || m_plot->axisRectAt(pos) != m_plot->axisRect())
                return false;
            c = int(std::lround(m_plot->xAxis->pixelToCoord(pos.x())));
            r = int(std::lround(m_plot->yAxis->pixelToCoord(pos.y())));
            return r >= 0 && r < m_words.rows() && c >= 0 && c < m_words.cols();
        },
        [this](int r, int c) {
            return tr("%1 → %2: %3").arg(m_rowLabels.value(r), m_colLabels.value(c)).arg(m_words(r, c), 0, 'f', 4);
        },
        [this](int r, int c) { toggleMark(r, c); });

    connect(m_layer, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) {
        if (m_filling || i < 0)
            return;
        m_settings.layer = m_layer->itemData(i).toInt();
        refresh();
        emit settingsChanged();
    });
    connect(m_head, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) {
        if (m_filling || i < 0)
            return;
        m_settings.head = m_head->itemData(i).toInt();
        refresh();
        emit settingsChanged();
    });
    connect(m_table, &QTableWidget::cellClicked, this, [this](int r, int) {
        const int i = m_layer->findData(r);
        if (i >= 0)
            m_layer->setCurrentIndex(i);
    });
    connect(m_clear, &QPushButton::clicked, this, &AlignmentView::clearMarks);
    connect(m_csv, &QPushButton::clicked, this, [this] {
        const QString path = m_csvPrompt ? m_csvPrompt()
                                         : QFileDialog::getSaveFileName(this, tr("Save the word alignment as CSV"),
                                                                        QStringLiteral("attnviz-alignment.csv"), tr("CSV (*.csv)"));
        if (path.isEmpty())
            return;
        QString error;
        m_status = saveCsv(path, &error) ? tr("Saved %1").arg(path) : error;
        draw();
    });
    refresh();
}

void AlignmentView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    refresh();
}

QCustomPlot *AlignmentView::plot() const { return hasMatrix() ? m_plot : nullptr; }

void AlignmentView::setSettings(const AlignmentSettings &s)
{
    m_settings = s;
    refresh();
}

QString AlignmentView::message() const { return m_message; }

std::vector<int> AlignmentView::marked() const
{
    std::vector<int> out(size_t(m_words.rows()), -1);
    for (const auto &[t, s] : m_settings.marks)
        if (t >= 0 && t < int(out.size()) && s >= 0 && s < m_words.cols())
            out[size_t(t)] = s;
    return out;
}

void AlignmentView::toggleMark(int row, int col)
{
    if (row < 0 || col < 0 || row >= m_words.rows() || col >= m_words.cols())
        return;
    const auto it = m_settings.marks.find(row);
    if (it != m_settings.marks.end() && it->second == col)
        m_settings.marks.erase(it);
    else
        m_settings.marks[row] = col;
    refresh();
    emit settingsChanged();
}

void AlignmentView::clearMarks()
{
    m_settings.marks.clear();
    refresh();
    emit settingsChanged();
}

QString AlignmentView::selectionText() const
{
    const QString layer = m_shownLayer < 0 ? tr("mean of layers") : tr("layer %1").arg(m_shownLayer);
    const QString head = m_shownHead < 0 ? tr("mean of heads") : tr("head %1").arg(m_shownHead);
    return layer + QStringLiteral(" · ") + head;
}

QPointF AlignmentView::cellCentre(int row, int col) const
{
    return {m_plot->xAxis->coordToPixel(col), m_plot->yAxis->coordToPixel(row)};
}

void AlignmentView::fillCombos()
{
    const Trace<float> *t = m_snapshot && m_snapshot->hasResult() ? m_snapshot->trace.get() : nullptr;
    const int layers = t ? int(t->seq2seq.cross.size()) : 0;
    const int heads = layers > 0 ? t->seq2seq.cross.front().attention.numHeads : 0;
    m_filling = true;
    if (m_layer->count() != layers + 1) {
        m_layer->clear();
        m_layer->addItem(tr("mean of layers"), -1);
        for (int l = 0; l < layers; ++l)
            m_layer->addItem(QString::number(l), l);
    }
    if (m_head->count() != heads + 1) {
        m_head->clear();
        m_head->addItem(tr("mean of heads"), -1);
        for (int h = 0; h < heads; ++h)
            m_head->addItem(QString::number(h), h);
    }
    // a layer or head beyond this model's (a session of another model) keeps its value and shows the mean
    m_layer->setCurrentIndex(std::max(0, m_layer->findData(m_settings.layer)));
    m_head->setCurrentIndex(std::max(0, m_head->findData(m_settings.head)));
    m_filling = false;
}

void AlignmentView::compute()
{
    m_words = Mat<double>();
    m_rowLabels.clear();
    m_colLabels.clear();
    m_argmax.clear();
    m_sweep.clear();
    m_bestLayer = -1;
    m_message.clear();
    const SnapshotPtr &s = m_snapshot;
    if (!s || !s->encoderDecoder) {
        m_message = tr("Alignment is for encoder-decoder models (T5, BART, Marian): open one from the Model menu.");
        return;
    }
    if (!s->hasResult() || !s->trace || s->trace->seq2seq.cross.empty()) {
        m_message = s->message.isEmpty() ? tr("Type a source sentence.") : s->message;
        return;
    }
    const Trace<float> &t = *s->trace;
    const int layers = int(t.seq2seq.cross.size()), heads = t.seq2seq.cross.front().attention.numHeads;
    const int layer = m_settings.layer < layers ? m_settings.layer : -1, head = m_settings.head < heads ? m_settings.head : -1;
    m_shownLayer = layer;
    m_shownHead = head;
    const std::vector<AlignmentWord> rows = alignmentWords(t.tokens), cols = alignmentWords(t.seq2seq.sourceTokens);
    m_words = mergeIntoWords(crossAttentionOf(t, layer, head), rows, cols);
    m_rowLabels = wordLabels(rows, t.tokens, s->model.get());
    m_colLabels = wordLabels(cols, t.seq2seq.sourceTokens, s->model.get());
    m_argmax = rowArgmax(m_words);
    m_sweep = layerSweep(t, marked());
    m_bestLayer = bestLayer(m_sweep);
}

void AlignmentView::refresh()
{
    compute();
    fillCombos();
    if (!deferred())
        draw();
}

void AlignmentView::draw()
{
    const bool shown = hasMatrix();
    m_refusal->setText(m_message);
    m_refusal->setVisible(!shown);
    m_body->setVisible(shown);
    if (!shown) {
        m_map->data()->clear();
        return;
    }
    const int rows = int(m_words.rows()), cols = int(m_words.cols());
    auto *data = new QCPColorMapData(cols, rows, QCPRange(0, cols - 1), QCPRange(0, rows - 1));
    double hi = 0;
    for (int y = 0; y < rows; ++y)
        for (int x = 0; x < cols; ++x) {
            data->setCell(x, y, m_words(y, x));
            hi = std::max(hi, m_words(y, x));
        }
    if (cols == 1)
        data->setKeyRange(QCPRange(-0.5, 0.5));
    if (rows == 1)
        data->setValueRange(QCPRange(-0.5, 0.5));
    m_map->setData(data);
    QCPColorGradient gradient = weightsGradient();
    const QCPRange range = weightsRange(0, hi > 0 ? hi : 1, gradient);
    m_scale->setGradient(gradient);
    m_scale->setDataRange(range);
    m_scale->axis()->setLabel(weightScaleLabel(tr("weight"), range));
    QVector<double> ax, ay, mx, my;
    for (int r = 0; r < rows; ++r)
        if (m_argmax[size_t(r)] >= 0) {
            ax << m_argmax[size_t(r)];
            ay << r;
        }
    const std::vector<int> marks = marked();
    for (int r = 0; r < rows; ++r)
        if (marks[size_t(r)] >= 0) {
            mx << marks[size_t(r)];
            my << r;
        }
    m_argmaxGraph->setData(ax, ay, true);
    m_marksGraph->setData(mx, my, true);
    m_plot->xAxis->setRange(-0.5, cols - 0.5);
    m_plot->yAxis->setRange(-0.5, rows - 0.5);
    m_titleText = tr("Cross-attention by word, %1").arg(selectionText());
    m_title->setText(m_titleText);
    labelTokenAxis(m_plot->xAxis, m_colLabels);
    labelTokenAxis(m_plot->yAxis, m_rowLabels);
    m_plot->replot(QCustomPlot::rpQueuedReplot);

    // the sweep
    m_table->setRowCount(int(m_sweep.size()));
    QStringList layerNames;
    for (int i = 0; i < int(m_sweep.size()); ++i) {
        const LayerAlignment &a = m_sweep[size_t(i)];
        layerNames << tr("L%1").arg(a.layer);
        const QStringList cells{accuracyText(a.meanOfHeads),
                                QStringLiteral("%1 · %2").arg(a.bestHead).arg(accuracyText(a.bestHeadAccuracy))};
        for (int c = 0; c < 2; ++c) {
            auto *item = new QTableWidgetItem(cells[c]);
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (a.layer == m_bestLayer) {
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
                item->setBackground(kAlignmentBestLayer);
                item->setForeground(Qt::black);
            }
            m_table->setItem(i, c, item);
        }
    }
    m_table->setVerticalHeaderLabels(layerNames);
    const int markedCount = int(std::count_if(marks.begin(), marks.end(), [](int m) { return m >= 0; }));
    QString note = markedCount == 0
        ? tr("Mark cells to score each layer: the share of marked target words whose largest weight is the marked "
             "source word.")
        : tr("%n marked target word(s). Best layer: %1 (heads averaged %2).", nullptr, markedCount)
              .arg(m_bestLayer)
              .arg(accuracyText(m_sweep.empty() ? std::nan("") : m_sweep[size_t(m_bestLayer)].meanOfHeads));
    if (!m_status.isEmpty())
        note += QLatin1Char('\n') + m_status;
    m_note->setText(note);
}

bool AlignmentView::saveCsv(const QString &path, QString *error) const
{
    if (!hasMatrix()) {
        if (error)
            *error = m_message.isEmpty() ? tr("No alignment to save.") : m_message;
        return false;
    }
    QString text = QStringLiteral("target\\source");
    for (const QString &l : m_colLabels)
        text += QLatin1Char(',') + alignmentCsvField(l);
    text += QLatin1Char('\n');
    for (int r = 0; r < m_words.rows(); ++r) {
        text += alignmentCsvField(m_rowLabels.value(r));
        for (int c = 0; c < m_words.cols(); ++c)
            text += QLatin1Char(',') + QString::number(m_words(r, c), 'g', 17); // read back exactly
        text += QLatin1Char('\n');
    }
    QString why;
    if (!writeOutputFile(path, text.toUtf8(), why)) {
        if (error)
            *error = tr("Could not write %1: %2").arg(path, why);
        return false;
    }
    return true;
}

} // namespace attnviz::ui
