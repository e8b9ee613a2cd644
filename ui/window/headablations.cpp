// SPDX-License-Identifier: GPL-3.0-or-later
#include "window/headablations.h"

#include "live/livesession.h"
#include "live/speculation.h"
#include "window/undocommands.h"

#include <QAction>
#include <QMenu>
#include <QTimer>
#include <QUndoStack>

#include <algorithm>

namespace attnviz::ui {

namespace {

bool isHead(const Intervention &e, int layer, int head)
{
    // a patch of a head's output (EditKind::Value, the Patching tab's) is no ablation of it
    return e.hook == HookPoint::AttnZ && e.layer == layer && e.head == head && e.kind != EditKind::Value;
}

} // namespace

HeadAblations::HeadAblations(LiveSession *session, QUndoStack *undo, std::function<QString()> refusal, QObject *parent)
    : QObject(parent), m_session(session), m_undo(undo), m_refusal(std::move(refusal))
{
    m_zero = new QAction(tr("&Ablate the selected head (zero)"), this);
    m_zero->setObjectName(QStringLiteral("ablateSelectedZeroAction"));
    m_zero->setShortcut(QKeySequence(tr("Ctrl+K")));
    connect(m_zero, &QAction::triggered, this, [this] {
        const int l = m_session->selectedLayer(), h = m_session->selectedHead();
        if (ablated(l, h))
            restore(l, h);
        else
            ablate(l, h, false);
    });
    m_mean = new QAction(tr("Ablate the selected head (&mean over the text)"), this);
    m_mean->setObjectName(QStringLiteral("ablateSelectedMeanAction"));
    m_mean->setShortcut(QKeySequence(tr("Ctrl+Shift+K")));
    connect(m_mean, &QAction::triggered, this,
            [this] { ablate(m_session->selectedLayer(), m_session->selectedHead(), true); });
    m_restoreAll = new QAction(tr("Restore all &heads"), this);
    m_restoreAll->setObjectName(QStringLiteral("restoreAllHeadsAction"));
    connect(m_restoreAll, &QAction::triggered, this, [this] { restore(-1, -1); });
    m_clean = new QAction(tr("&Clean model (the ablations kept, not applied)"), this);
    m_clean->setObjectName(QStringLiteral("cleanModelAction"));
    m_clean->setCheckable(true);
    connect(m_clean, &QAction::toggled, m_session, &LiveSession::setEditsShownClean);
    m_dwell = new QTimer(this);
    m_dwell->setSingleShot(true);
    m_dwell->setInterval(kDwellMs);
    connect(m_dwell, &QTimer::timeout, this, [this] {
        if (m_hovered.first < 0 || m_hovered == m_pointed)
            return;
        m_pointed = m_hovered;
        m_pointedMenu = false;
        update();
    });
    // a click on a thumbnail selects its layer, then its head: the pointed head stays what is
    // speculated on through the step between, and gives way once the selection has settled elsewhere
    m_selectionSettled = new QTimer(this);
    m_selectionSettled->setSingleShot(true);
    m_selectionSettled->setInterval(0);
    connect(m_selectionSettled, &QTimer::timeout, this, [this] {
        if (m_pointed.first >= 0 && m_selected != m_pointed) {
            m_pointed = {-1, -1};
            m_pointedMenu = false;
            update();
        }
    });
    connect(m_session, &LiveSession::editsChanged, this, &HeadAblations::update);
    connect(m_session, &LiveSession::selectionChanged, this, &HeadAblations::update);
    connect(m_session, &LiveSession::layerChanged, this, &HeadAblations::update);
    update();
}

void HeadAblations::addEditActions(QMenu *menu) const
{
    menu->addAction(m_zero);
    menu->addAction(m_mean);
    menu->addAction(m_restoreAll);
}

void HeadAblations::point(int layer, int head, bool menu)
{
    const QPair<int, int> at(layer, head);
    if (menu) { // at once
        m_dwell->stop();
        m_hovered = at;
        if (at == m_pointed && m_pointedMenu)
            return;
        m_pointed = at;
        m_pointedMenu = true;
        update();
        // The menu holds the keyboard while it is open: no letter can want the core's pool, so the
        // speculation takes it at once (a press of its Ablate entry then finds more of it done).
        m_session->speculation()->hurry();
        return;
    }
    if (at == m_hovered)
        return;
    m_hovered = at;
    // left the heads: what is speculated on stays (the hand may be on its way to the keys)
    if (layer < 0)
        m_dwell->stop();
    else
        m_dwell->start();
}

bool HeadAblations::ablated(int layer, int head) const
{
    const auto &e = m_session->edits();
    return std::any_of(e.begin(), e.end(), [&](const Intervention &i) { return isHead(i, layer, head); });
}

void HeadAblations::ablate(int layer, int head, bool mean)
{
    if (!m_refusal().isEmpty() || layer < 0 || head < 0)
        return;
    m_lastMean = mean;
    m_ablatedOnce = true;
    setEdits(withAblation(m_session->edits(), layer, head, mean),
             tr("Ablate L%1 H%2 (%3)").arg(layer).arg(head).arg(QLatin1String(editKindName(mean ? EditKind::MeanOverText : EditKind::Zero))));
}

std::vector<Intervention> HeadAblations::withAblation(std::vector<Intervention> to, int layer, int head, bool mean)
{
    Intervention e;
    e.hook = HookPoint::AttnZ;
    e.layer = layer;
    e.head = head;
    e.kind = mean ? EditKind::MeanOverText : EditKind::Zero;
    const auto it = std::find_if(to.begin(), to.end(), [&](const Intervention &i) { return isHead(i, layer, head); });
    if (it != to.end())
        *it = e;
    else
        to.push_back(e);
    return to;
}

void HeadAblations::restore(int layer, int head)
{
    std::vector<Intervention> to = m_session->edits();
    if (layer < 0) // every ablation; a patch stays (the Patching tab's Clear patch takes it out)
        to.erase(std::remove_if(to.begin(), to.end(), [](const Intervention &i) { return i.kind != EditKind::Value; }),
                 to.end());
    else
        to.erase(std::remove_if(to.begin(), to.end(), [&](const Intervention &i) { return isHead(i, layer, head); }),
                 to.end());
    setEdits(to, layer < 0 ? tr("Restore all heads") : tr("Restore L%1 H%2").arg(layer).arg(head));
}

void HeadAblations::setEdits(const std::vector<Intervention> &to, const QString &what)
{
    const std::vector<Intervention> before = m_session->edits();
    if (to == before)
        return;
    m_session->setEdits(to);
    LiveSession *s = m_session;
    m_undo->push(new WindowCommand(
        what, [s, before] { s->setEdits(before); }, [s, to] { s->setEdits(to); }));
}

void HeadAblations::update()
{
    const QString refusal = m_refusal();
    const int l = m_session->selectedLayer(), h = m_session->selectedHead();
    if (const QPair<int, int> selected(l, h); selected != m_selected) {
        m_selected = selected;
        if (m_pointed.first >= 0 && m_pointed != selected)
            m_selectionSettled->start();
    }
    const bool can = refusal.isEmpty() && h >= 0;
    const bool on = ablated(l, h);
    m_zero->setEnabled(can);
    m_zero->setText(on ? tr("Restore the selected head L%1 H%2").arg(l).arg(h)
                       : tr("&Ablate the selected head L%1 H%2 (zero)").arg(l).arg(h));
    m_mean->setEnabled(can);
    m_mean->setText(tr("Ablate the selected head L%1 H%2 (&mean over the text)").arg(l).arg(h));
    const auto &edits = m_session->edits();
    m_restoreAll->setEnabled(
        std::any_of(edits.begin(), edits.end(), [](const Intervention &e) { return e.kind != EditKind::Value; }));
    for (QAction *a : {m_zero, m_mean})
        a->setToolTip(
            refusal.isEmpty()
                ? tr("Set the head's output before W_O (attn.hook_z) at every position; every view recomputes")
                : refusal);
    // what Ctrl+K (or Ctrl+Shift+K, when the last ablation was to the mean) would compute, once a
    // head has been ablated in this window: before that a speculation would cost every pause in
    // typing a forward of half the model and more, for a press that may never come
    if (!edits.empty())
        m_ablatedOnce = true;
    // the head pointed at (on this model's grid), else the selected one
    if (const SnapshotPtr s = m_session->snapshot();
        s && s->fromModel() && (m_pointed.first >= s->modelInfo.layers || m_pointed.second >= s->modelInfo.heads))
        m_pointed = {-1, -1};
    const bool pointed = m_pointed.first >= 0 && m_pointed.second >= 0;
    const int sl = pointed ? m_pointed.first : l, sh = pointed ? m_pointed.second : h;
    const bool worth = m_ablatedOnce || (pointed && m_pointedMenu);
    m_session->setSpeculativeEdits(refusal.isEmpty() && sh >= 0 && !ablated(sl, sh) && worth
                                       ? withAblation(edits, sl, sh, m_lastMean)
                                       : std::vector<Intervention>(),
                                   pointed);
    m_clean->setEnabled(!m_session->edits().empty());
    m_clean->setToolTip(
        m_session->edits().empty()
            ? tr("No head is ablated: the model shown is the clean model")
            : tr("Show the model without the ablations (%1), keeping them").arg(describeAblations(m_session->edits())));
    const QSignalBlocker block(m_clean);
    m_clean->setChecked(m_session->editsShownClean());
}

QString HeadAblations::notice(const ComputeSnapshot &s)
{
    if (s.edits.empty())
        return QString();
    const QString list = describeAblations(s.edits);
    if (s.editsShownClean)
        return tr("Clean model shown: the ablations %1 are kept, not applied (View ▸ Clean model).").arg(list);
    QString text = tr("Edited model: %1.").arg(list);
    if (s.settings.backend != QLatin1String("cpu"))
        text += tr(" Computed on the CPU: ablations are applied by the CPU forward only.");
    if (!s.cleanNext.empty())
        text +=
            tr(" Predictions show each token's change against the clean model%1.")
                .arg(s.cleanTrace ? tr("; the Logit lens its lines, Direct logit attribution its parts (Δ vs clean)")
                                  : QString());
    return text;
}

} // namespace attnviz::ui
