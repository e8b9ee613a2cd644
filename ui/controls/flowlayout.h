// SPDX-License-Identifier: GPL-3.0-or-later
// A row of controls that wraps onto further lines where the width is too small for all of them, as
// words wrap in a paragraph: each item keeps the width it asks for (its size hint, never less than
// its minimum), so no control is ever squeezed or cut. The height follows the width
// (heightForWidth), which a QBoxLayout above asks for. Put a label and the control it names in one
// item (group()) so that they wrap together.
#pragma once

#include <QLayout>
#include <QList>

namespace attnviz::ui {

class FlowLayout : public QLayout {
    Q_OBJECT
public:
    // `hSpacing`: between items on a line; `vSpacing`: between lines.
    explicit FlowLayout(QWidget *parent = nullptr, int hSpacing = 12, int vSpacing = 4);
    ~FlowLayout() override;

    // One item of `widgets` side by side (a label and its control): a small widget of its own.
    static QWidget *group(const QList<QWidget *> &widgets, QWidget *parent);

    // The lines the items take at `width` (what heightForWidth lays out; 0 without items).
    int lineCount(int width) const;

    void addItem(QLayoutItem *item) override;
    int count() const override { return int(m_items.size()); }
    QLayoutItem *itemAt(int index) const override;
    QLayoutItem *takeAt(int index) override;
    Qt::Orientations expandingDirections() const override { return {}; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize minimumSize() const override; // the widest item: narrower, an item would be cut
    QSize sizeHint() const override;    // every item on one line
    void setGeometry(const QRect &rect) override;

private:
    // Places the items in `rect` (only measures where `apply` is false); returns the height used.
    int place(const QRect &rect, bool apply, int *lines = nullptr) const;
    QSize itemSize(const QLayoutItem *item) const;
    QList<QLayoutItem *> m_items;
    int m_hSpacing, m_vSpacing;
};

} // namespace attnviz::ui
