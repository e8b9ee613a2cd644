// SPDX-License-Identifier: GPL-3.0-or-later
// The Alignment tab: an encoder-decoder model's cross-attention read as a word alignment. A heatmap
// of target words (down) × source words (across), subwords merged into words (wordalignment.h says
// how), of one cross-attention layer or the mean of layers and one head or the mean of heads, with a
// marker on each row's largest weight (the argmax path). Clicking a cell marks the source word the
// user expects that target word to align with (one per target word; clicking it again takes it
// off); a table then scores every layer against the marks: the fraction of marked target words
// whose argmax is the marked word, for the layer's mean over heads and for its best head, the best
// layer highlighted. CSV of the word matrix; File ▸ Export current view writes the heatmap. For a
// model that is not an encoder-decoder one the tab says so in one line.
#pragma once

#include "views/deferredview.h"
#include "views/wordalignment.h"

#include <QStringList>

#include <functional>

class QCPColorMap;
class QCPColorScale;
class QCPGraph;
class QCPTextElement;
class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;

namespace attnviz::ui {

class AlignmentView : public DeferredView {
    Q_OBJECT
public:
    explicit AlignmentView(QWidget *parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    // The heatmap once a matrix is shown; null before (and for other models).
    QCustomPlot *plot() const override;

    AlignmentSettings settings() const { return m_settings; }
    void setSettings(const AlignmentSettings &s);

    // The one line shown instead of the heatmap ("" while it shows one).
    QString message() const;
    // What the heatmap shows: rows the target's words, columns the source's.
    const Mat<double> &wordMatrix() const { return m_words; }
    QStringList rowLabels() const { return m_rowLabels; }
    QStringList columnLabels() const { return m_colLabels; }
    const std::vector<int> &argmax() const { return m_argmax; }
    // Per target word (row) its marked source word, -1 where none; as long as the rows.
    std::vector<int> marked() const;
    // As a click on the cell: marks (row, col), or takes the mark off when it is the row's mark.
    void toggleMark(int row, int col);
    void clearMarks();
    // The layer sweep against the marks (empty while nothing is marked) and its best layer (-1: none).
    const std::vector<LayerAlignment> &sweep() const { return m_sweep; }
    int bestSweepLayer() const { return m_bestLayer; }
    // The centre of cell (row, col) in the plot's pixels (tests click it).
    QPointF cellCentre(int row, int col) const;
    // The layer and head the matrix is of, as its title says ("mean of layers · head 2" ...).
    QString selectionText() const;

    // The word matrix as CSV: a header row ("target\source" and the source words), then one row per
    // target word. False with `error` (nothing shown, or the file cannot be written).
    bool saveCsv(const QString &path, QString *error) const;
    void setCsvPrompt(std::function<QString()> prompt) { m_csvPrompt = std::move(prompt); }

    QComboBox *layerCombo() const { return m_layer; }
    QComboBox *headCombo() const { return m_head; }
    QPushButton *csvButton() const { return m_csv; }
    QPushButton *clearButton() const { return m_clear; }
    QTableWidget *sweepTable() const { return m_table; }

signals:
    void settingsChanged(); // the user chose a layer or a head, or marked a cell (sessions keep them)

protected:
    void rebuild() override { draw(); }

private:
    void compute();  // the matrix, argmax and sweep from the snapshot and the settings
    void fillCombos();
    void draw();     // the heatmap and the table (deferred while another tab is shown)
    void refresh();  // compute, then draw unless deferred
    bool hasMatrix() const { return m_words.rows() > 0 && m_words.cols() > 0; }

    SnapshotPtr m_snapshot;
    AlignmentSettings m_settings;
    Mat<double> m_words;
    QStringList m_rowLabels, m_colLabels;
    std::vector<int> m_argmax;
    std::vector<LayerAlignment> m_sweep;
    int m_bestLayer = -1;
    int m_shownLayer = -1, m_shownHead = -1; // what the matrix is of (a choice beyond the model's: the mean)
    QString m_message, m_status, m_titleText;
    std::function<QString()> m_csvPrompt;
    bool m_filling = false; // the combos being refilled: their signals change nothing

    QLabel *m_refusal = nullptr, *m_hint = nullptr, *m_note = nullptr;
    QWidget *m_body = nullptr;
    QComboBox *m_layer = nullptr, *m_head = nullptr;
    QPushButton *m_clear = nullptr, *m_csv = nullptr;
    QTableWidget *m_table = nullptr;
    QCustomPlot *m_plot = nullptr;
    QCPColorMap *m_map = nullptr;
    QCPColorScale *m_scale = nullptr;
    QCPTextElement *m_title = nullptr;
    QCPGraph *m_argmaxGraph = nullptr, *m_marksGraph = nullptr;
};

} // namespace attnviz::ui
