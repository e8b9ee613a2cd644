// SPDX-License-Identifier: GPL-3.0-or-later
// Direct logit attribution (core: attnviz/reads.h): for the selected position and one target token
// — the one the model predicts there, the one that actually follows, or one typed in — how much each
// head and each MLP adds to that token's logit (each part through the final norm with its scale
// frozen, then the token's unembedding row), as a layers x heads grid plus an MLP column on one
// diverging scale; the title adds the input and bias terms, which with the grid sum to the logit.
// Click a head to open it (View::headOpened). Causal checkpoints with pre-norm or sandwich blocks.
// An edited model (the window's head ablations or a patch): the grid is the edited run's, each cell's
// hover adds the clean run's part and the difference, and "Δ vs clean" draws edited minus clean (the
// same target token, attributed in the clean model's trace, ComputeSnapshot::cleanTrace). An
// encoder-decoder model's decoder (seq2seqreads.h): per layer its self-attention heads, then its
// cross-attention heads (a line between), then the MLP column; post-norm decoders (BART, Marian)
// say why there is no such sum.
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include "attnviz/reads.h"
#include "attnviz/seq2seqreads.h"

#include <vector>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPItemLine;
class QCPItemRect;
class QCPItemText;
class QCPTextElement;
class QLabel;
class QLineEdit;

namespace attnviz::ui {

class DlaView : public DeferredView {
    Q_OBJECT
public:
    enum class Target { Predicted, ActualNext, Typed };
    static constexpr int kMaxNumbers = 400; // cells with their number written in them, at most

    explicit DlaView(QWidget *parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    // The selection: the query is the position (-1: the last); layer and head are highlighted.
    void setSelection(int layer, int head, int query) override;
    void setTarget(Target target);
    Target target() const { return m_target; }
    // The typed target: a vocabulary spelling ("Ġcat") or text that is one token (" cat").
    void setTypedToken(const QString &token);

    QCustomPlot *plot() const override { return m_plot; }
    QString title() const;
    // Why there is no grid ("" when there is one): not a causal checkpoint, a typed token not in the
    // vocabulary, no actual next token after the last position …
    QString message() const { return m_message; }
    const Attribution &attribution() const { return m_attr; }
    // An encoder-decoder model's attribution (seq2seq() true): as computed; attribution() holds it as
    // the grid draws it (heads: the self-attention heads, then the cross-attention heads).
    bool seq2seq() const { return m_seq2seq; }
    const Seq2SeqAttribution &seq2seqAttribution() const { return m_s2s; }
    bool hasAttribution() const { return m_message.isEmpty() && m_attr.target >= 0; }
    // The edited run's attribution: layers x (heads + 1), the last column the MLPs.
    Mat<double> matrix() const;
    // An edited model with its clean trace: the clean run's attribution of the same target at the
    // same position (hasClean), and the grid "Δ vs clean" draws: matrix() minus the clean one.
    bool hasClean() const { return hasAttribution() && m_clean.target >= 0; }
    const Attribution &cleanAttribution() const { return m_clean; }
    Mat<double> deltaMatrix() const;
    void setShowDelta(bool delta);
    bool showDelta() const { return m_delta; }
    QCheckBox *deltaBox() const { return m_deltaBox; }
    QString cellText(int layer, int column) const;
    QPoint cellCenter(int layer, int column) const; // widget coordinates (clicks)

private:
    void rebuild() override;
    void compute();
    void computeSeq2Seq();
    void draw();
    // After a layout: the head axis's tick step and the cells' number font from the cells' sizes;
    // whether the ticks changed (the layout is made again).
    bool fitToCells();

    SnapshotPtr m_snapshot;
    int m_query = -1, m_layer = 0, m_head = 0;
    Target m_target = Target::Predicted;
    QString m_typed;
    Attribution m_attr, m_clean;
    Seq2SeqAttribution m_s2s;
    bool m_seq2seq = false;
    bool m_delta = false;
    QCheckBox *m_deltaBox = nullptr;
    QString m_message;
    QStringList m_labels;
    QComboBox *m_targetBox = nullptr;
    QLineEdit *m_typedEdit = nullptr;
    QCustomPlot *m_plot = nullptr;
    QCPTextElement *m_title = nullptr;
    QString m_titleText;
    QCPAxisRect *m_headRect = nullptr, *m_mlpRect = nullptr;
    QCPColorMap *m_headMap = nullptr, *m_mlpMap = nullptr;
    QCPColorScale *m_scale = nullptr;
    QCPItemRect *m_sel = nullptr;
    QCPItemLine *m_split = nullptr; // between self- and cross-attention heads
    std::vector<QCPItemText *> m_numbers;
};

} // namespace attnviz::ui
