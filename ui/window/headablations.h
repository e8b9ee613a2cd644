// SPDX-License-Identifier: GPL-3.0-or-later
// Head ablation in the window: the Edit menu's actions for the selected head (Ctrl+K: ablate to zero,
// or restore an ablated one; Ctrl+Shift+K: ablate to the mean over the text), Restore all heads, the
// View menu's Clean model switch, and the requests of the Layers × heads grid's menu. The edits
// themselves live in LiveSession (every request carries them); each ablate or restore is one undo
// step. notice() is what the window says above the chips while edits exist. Once a head has been
// ablated in the window, while the selected head is not ablated, the session speculates on its
// ablation the way the last one was made (LiveSession::setSpeculativeEdits), so that pressing Ctrl+K
// finds it computed. The head the pointer rests on in the Layers × heads grid (point(), kDwellMs) is
// speculated on instead, pointed (at normal priority, a press joins it), until the selection goes to
// another head; a head's right-click menu names its head at once, even before the first ablation.
#pragma once

#include "live/livetypes.h"

#include <QObject>
#include <QPair>
#include <QString>

#include <functional>
#include <vector>

class QAction;
class QMenu;
class QTimer;
class QUndoStack;

namespace attnviz::ui {

class LiveSession;

class HeadAblations : public QObject {
    Q_OBJECT
public:
    // `refusal` says why the model in use cannot be edited ("" when it can).
    HeadAblations(LiveSession *session, QUndoStack *undo, std::function<QString()> refusal, QObject *parent);

    // Ablates (layer, head) to zero or to its mean over the text (replacing its earlier ablation);
    // restore takes it out (layer -1: every head). One undo step each; nothing for a model that
    // cannot be edited or a change that changes nothing.
    void ablate(int layer, int head, bool mean);
    void restore(int layer, int head);
    bool ablated(int layer, int head) const;

    QAction *zeroAction() const { return m_zero; } // the selected head: ablate to zero / restore (Ctrl+K)
    QAction *meanAction() const { return m_mean; } // the selected head: ablate to the mean (Ctrl+Shift+K)
    QAction *restoreAllAction() const { return m_restoreAll; }
    QAction *cleanAction() const { return m_clean; } // View ▸ Clean model: checkable, enabled while edits exist
    void addEditActions(QMenu *menu) const;

    // The pointer entered (layer, head) on the grid ((-1, -1): left the heads); `menu`: its menu opened.
    // Resting kDwellMs on a head (or its menu at once) makes it the head speculated on.
    void point(int layer, int head, bool menu);
    // The head speculated on by pointing ((-1, -1): the selected one is).
    QPair<int, int> pointedHead() const { return m_pointed; }
    // How long the pointer rests on a head before its ablation is speculated on: long enough that a
    // pointer sweeping across the thumbnails to another one starts nothing on those it crosses, short
    // enough that a head aimed at and clicked 150 ms after it is reached has had most of that computed.
    static constexpr int kDwellMs = 80;

    // Enables the actions for the model in use and the edits (after a model, snapshot or edit change).
    void update();
    // The line above the chips for a snapshot: the edits and whether they are applied, and that the
    // CPU computed where a GPU was asked for; "" without edits.
    static QString notice(const ComputeSnapshot &s);

private:
    // `edits` with (layer, head) ablated to zero or its mean (its earlier ablation replaced).
    static std::vector<Intervention> withAblation(std::vector<Intervention> edits, int layer, int head, bool mean);
    void setEdits(const std::vector<Intervention> &to, const QString &what);

    LiveSession *m_session;
    QUndoStack *m_undo;
    std::function<QString()> m_refusal;
    bool m_lastMean = false; // the last ablation was to the mean: the one speculated on
    bool m_ablatedOnce = false; // a head was ablated in this window: speculation is worth its CPU
    QPair<int, int> m_hovered{-1, -1};  // under the pointer, resting for kDwellMs (m_dwell)
    QPair<int, int> m_pointed{-1, -1};  // speculated on in place of the selected head ((-1, -1): none)
    bool m_pointedMenu = false;         // by its menu: even before the first ablation
    QPair<int, int> m_selected{-1, -1}; // the selection update() saw last
    QTimer *m_dwell = nullptr;
    QTimer *m_selectionSettled = nullptr; // a selection moved away from the pointed head, seen once it settles
    QAction *m_zero = nullptr, *m_mean = nullptr, *m_restoreAll = nullptr, *m_clean = nullptr;
};

} // namespace attnviz::ui
