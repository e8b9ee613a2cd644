// SPDX-License-Identifier: GPL-3.0-or-later
// The tokenization as chips: one rounded box per token, unknown words (not in the embedding
// table) dashed in orange, padded keys struck through. Clicking a chip emits its index.
// Hovering a chip emits its index (the predictions panel shows what the model said there).
// Painted in one widget (not one button per token) so that a pasted page stays cheap.
#pragma once

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
    void setPadded(const std::set<int> &padded, bool paddingActive);
    void setPlaceholder(const QString &text);
    void setClickable(bool on) { m_clickable = on; }

    int chipCount() const { return int(m_tokens.size()); }
    QRect chipRect(int index) const; // widget coordinates
    bool isUnknown(int index) const { return index >= 0 && index < int(m_unknown.size()) && m_unknown[size_t(index)]; }

    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    void tokenClicked(int index);
    // The chip under the mouse changed (-1: none, the mouse left the chips).
    void tokenHovered(int index);
    // The height the chips need at the current width, after each layout.
    void chipsLaidOut(int height);

protected:
    void paintEvent(QPaintEvent *) override;
    void resizeEvent(QResizeEvent *) override;
    void mouseReleaseEvent(QMouseEvent *e) override;
    void mouseMoveEvent(QMouseEvent *e) override;
    void leaveEvent(QEvent *e) override;

private:
    int layoutChips(int width, std::vector<QRect> *rects) const;

    QStringList m_tokens;
    std::vector<uint8_t> m_unknown;
    int m_total = 0;
    std::set<int> m_padded;
    bool m_paddingActive = false;
    bool m_clickable = true;
    QString m_placeholder;
    std::vector<QRect> m_rects;
    int m_hovered = -1;
};

} // namespace attnviz::ui
