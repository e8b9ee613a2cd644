// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/headablationmenu.h"

#include "views/view.h"

#include <QAction>

#include <algorithm>

namespace attnviz::ui {

QString ablationOf(const ComputeSnapshot &snapshot, int layer, int head)
{
    for (const Intervention &e : snapshot.edits)
        if (e.hook == HookPoint::AttnZ && e.layer == layer && e.head == head && e.kind != EditKind::Value) // a patch is no ablation
            return QString::fromLatin1(editKindName(e.kind));
    return QString();
}

namespace {

bool anyAblation(const std::vector<Intervention> &edits)
{
    return std::any_of(edits.begin(), edits.end(), [](const Intervention &e) { return e.kind != EditKind::Value; });
}

} // namespace

QList<QAction *> headAblationActions(View *view, const SnapshotPtr &snapshot, int layer, int head, bool selected,
                                     QObject *parent)
{
    const QString refusal =
        snapshot ? editsRefusal(snapshot->modelInfo, snapshot->fromModel()) : View::tr("Computing…");
    const bool ablated = snapshot && !ablationOf(*snapshot, layer, head).isEmpty();
    QList<QAction *> out;
    const auto add = [&](const QString &text, const QString &name, bool enabled, const QString &shortcut, auto emitIt) {
        auto *a = new QAction(shortcut.isEmpty() ? text : text + QLatin1Char('\t') + shortcut, parent);
        a->setObjectName(name);
        a->setEnabled(refusal.isEmpty() && enabled);
        if (!refusal.isEmpty())
            a->setToolTip(refusal);
        QObject::connect(a, &QAction::triggered, view, emitIt);
        out << a;
    };
    // the window's shortcuts act on the selected head (the red frame): named on its entries
    add(View::tr("Ablate L%1 H%2 (zero)").arg(layer).arg(head), QStringLiteral("ablateZeroAction"), true,
        selected ? QStringLiteral("Ctrl+K") : QString(),
        [view, layer, head] { emit view->headAblationRequested(layer, head, false); });
    add(View::tr("Ablate L%1 H%2 (mean over the text)").arg(layer).arg(head), QStringLiteral("ablateMeanAction"), true,
        selected ? QStringLiteral("Ctrl+Shift+K") : QString(),
        [view, layer, head] { emit view->headAblationRequested(layer, head, true); });
    add(View::tr("Restore L%1 H%2").arg(layer).arg(head), QStringLiteral("restoreHeadAction"), ablated,
        selected && ablated ? QStringLiteral("Ctrl+K") : QString(),
        [view, layer, head] { emit view->headRestoreRequested(layer, head); });
    add(View::tr("Restore all heads"), QStringLiteral("restoreAllAction"), snapshot && anyAblation(snapshot->edits),
        QString(), [view] { emit view->headRestoreRequested(-1, -1); });
    return out;
}

} // namespace attnviz::ui
