// SPDX-License-Identifier: GPL-3.0-or-later
// The tokenization as chips: one rounded box per token, unknown words (not in the embedding
// table) dashed in orange, padded keys struck through. Clicking a chip emits its index. A model's
// subword pieces show as text: GPT-2's space marker as a visible ␣, a piece that continues a word
// (BERT's ##ing, a GPT-2 piece without a space before it) drawn against its word with no gap, the
// tokenizer's specials ([CLS], [SEP], <|endoftext|>) in their own colour; the tooltip names the
// vocabulary piece and its id.
// Hovering a chip emits its index (the predictions panel shows what the model said there).
// Dragging across chips (or Shift-clicking a chip after clicking another) selects the tokens between,
// drawn with a thicker outline, and emits the range (the Layers tab's "Use selection as span").
// Painted in one widget (not one button per token) so that a pasted page stays cheap; a keystroke
// measures only labels it has not measured before, repaints only the chips that changed, paints only
// the chips in view, and asks the layout for room only when the chips' height changes.
#pragma once

#include "attnviz/model.h"

#include <QHash>
#include <QPair>
#include <QStringList>
#include <QWidget>

#include <set>
#include <vector>

namespace attnviz::ui {

class TokenChipsView : public QWidget {
    Q_OBJECT
public:
    static constexpr int kMaxChips = 600;

    explicit TokenChipsView(QWidget *parent = nullptr);

    void setTokens(const QStringList &tokens, const std::vector<uint8_t> &unknown, int totalTokens);
    // How a tokenizer marks a piece that continues a word.
    enum class Pieces {
        Words,     // word vectors: every token a word
        ByteLevel, // GPT-2: a piece without a space marker continues the letters before it
        WordPiece, // BERT: ## continues the word
    };
    // A trace's tokens: their display text, and what the tokenizer says of each (special, id, piece).
    void setTraceTokens(const std::vector<TraceToken> &tokens, int totalTokens, Pieces pieces);
    void setPadded(const std::set<int> &padded, bool paddingActive);
    void setPlaceholder(const QString &text);
    // Chips from `index` on were generated (views/generationpanel.h): drawn green; -1: none.
    void setGeneratedFrom(int index);
    int generatedFrom() const { return m_generatedFrom; }
    void setClickable(bool on) { m_clickable = on; }

    // The selected tokens [begin, end) ((-1, -1): none); set here or by a drag across the chips.
    QPair<int, int> selectedRange() const { return {m_selBegin, m_selEnd}; }
    void setSelectedRange(int begin, int end);

    int chipCount() const { return int(m_tokens.size()); }
    QRect chipRect(int index) const; // widget coordinates
    bool isUnknown(int index) const { return index >= 0 && index < int(m_unknown.size()) && m_unknown[size_t(index)]; }
    QString chipText(int index) const { return index >= 0 && index < m_tokens.size() ? m_tokens.at(index) : QString(); }
    // The token behind a chip (vocabulary piece, id, special); null for chips set by setTokens().
    const TraceToken *chipToken(int index) const
    {
        return index >= 0 && index < int(m_trace.size()) ? &m_trace[size_t(index)] : nullptr;
    }
    bool isSpecial(int index) const { return chipFlag(index, kSpecial); }
    // Continues the word of the chip before it (drawn against it, no gap).
    bool isContinuation(int index) const { return chipFlag(index, kContinues); }

    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    void tokenClicked(int index);
    // The selected tokens changed: [begin, end), or (-1, -1) where none is selected.
    void rangeSelected(int begin, int end);
    // The chip under the mouse changed (-1: none, the mouse left the chips).
    void tokenHovered(int index);
    // The height the chips need at the current width, after each layout.
    void chipsLaidOut(int height);

protected:
    void paintEvent(QPaintEvent *) override;
    void resizeEvent(QResizeEvent *) override;
    void mousePressEvent(QMouseEvent *e) override;
    void mouseReleaseEvent(QMouseEvent *e) override;
    bool event(QEvent *e) override; // tooltips
    void mouseMoveEvent(QMouseEvent *e) override;
    void leaveEvent(QEvent *e) override;
    void changeEvent(QEvent *e) override; // a new font: measure again

private:
    enum Flag : uint8_t { kSpecial = 1, kContinues = 2 };
    int m_generatedFrom = -1;
    bool chipFlag(int index, Flag f) const
    {
        return index >= 0 && index < int(m_flags.size()) && (m_flags[size_t(index)] & f);
    }
    int layoutChips(int width, std::vector<QRect> *rects) const;
    // After m_tokens, m_unknown and m_flags changed (the old ones given): measures the new labels,
    // lays the chips out, repaints what changed, and asks for a new height when it changed.
    void tokensChanged(const QStringList &oldTokens, const std::vector<uint8_t> &oldUnknown,
                       const std::vector<uint8_t> &oldFlags, int oldTotal);
    void measure();

    QStringList m_tokens;
    std::vector<uint8_t> m_unknown;
    std::vector<uint8_t> m_flags; // Flag bits per chip
    std::vector<TraceToken> m_trace;
    int m_total = 0;
    std::set<int> m_padded;
    bool m_paddingActive = false;
    bool m_clickable = true;
    QString m_placeholder;
    std::vector<QRect> m_rects;
    std::vector<int> m_widths;          // each chip's width in the current font
    QHash<QString, int> m_advance;      // label -> text width in the current font (labels repeat)
    int m_laidOutHeight = -1;           // the height last reported to the layout
    int m_hovered = -1;
    int chipAt(const QPoint &pos) const; // -1: none
    int m_pressed = -1, m_anchor = -1;   // the chip the drag began on; the last chip clicked
    int m_selBegin = -1, m_selEnd = -1;
};

} // namespace attnviz::ui
