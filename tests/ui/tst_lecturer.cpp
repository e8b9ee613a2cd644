// SPDX-License-Identifier: GPL-3.0-or-later
// What a lecturer preparing a class found (the small things) and asked for next, read back from the
// window: the layout Esc gives back, a step button that stays put, lesson and caption texts that name
// what is there, the Predictions dock's columns and headings, the reason a long text is cut, disabled
// controls that look disabled, counts in the right number, tabs that fit, placeholders and hints that
// fit their tokenizer, one hatched shape in vector exports, a quiet command line; then the lesson
// flow (the first start's welcome, next and previous lesson), the Help menu's guide (the README's tour,
// every shortcut in it), undo and redo, and a lesson written as slides.
#include "testpaths.h"
#include "controls/controlpanel.h"
#include "controls/formwidgets.h"
#include "controls/inputpanel.h"
#include "controls/sentenceedit.h"
#include "controls/tokenchipsview.h"
#include "files/figureexport.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "style/appearance.h"
#include "style/legibility.h"
#include "style/plotstyle.h"
#include "teaching/lessonpanel.h"
#include "teaching/presets.h"
#include "views/heatmapview.h"
#include "views/pipelineview.h"
#include "views/predictionsview.h"
#include "window/guidedialog.h"
#include "window/lessonslides.h"

#include "../support/modelfolders.h"
#include "../support/runattnviz.h"
#include "testsupport.h"

#include "attnviz/model.h"
#include "bundledmodel.h"

#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QFormLayout>
#include <QImage>
#include <QMenuBar>
#include <QProcess>
#include <QLineEdit>
#include <QAbstractSpinBox>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollBar>
#include <QSettings>
#include <QShortcut>
#include <QSlider>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStyleOption>
#include <QTabBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTextBrowser>
#include <QToolButton>
#include <QUndoStack>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;

class TestLecturer : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init();
    void cleanup();

    // the Low list
    void escGivesTheLayoutBack();
    void stepButtonStaysPut();
    void lessonTextsNameWhatIsThere();
    void predictionsDockShowsItsColumns();
    void partialCharacterPieceReadsAsBytes();
    void cutNamesTheModelsPositions();
    void disabledControlsLookDisabled();
    void disabledRowLabelsLookDisabled();
    void highContrastShowsCheckBoxes();
    void countsInTheRightNumber();
    void tabsFitWithAModel();
    void placeholderAndHintFit();
    void hatchedAreaIsOneShape();
    void commandLineIsQuiet();

    // what the lecturer asked for next
    void firstStartWelcomes();
    void firstStartWelcomesFromTheCommandLine_data();
    void firstStartWelcomesFromTheCommandLine();
    void nextAndPreviousLesson();
    void presentingKeepsLessonSteps();
    void helpMenuOpensTheGuide();
    void guideListsEveryShortcut();
    void readmeTourIsTheGuide();
    void undoRedoControlsAndChips();
    void undoGivesTheMaskedWordBack();
    void lessonAsSlides();
    void lessonAsSlidesFromTheCommandLine();

private:
    bool waitForResult(int ms = 30000);
    bool applyPreset(const QString &id) { return m_w->applyPreset(id) && waitForResult(); }
    QString readText(const QString &path);
    // ATTNVIZ_SCREENSHOT_DIR=DIR keeps a PNG of `w` as NAME.png, for looking at.
    void screenshot(QWidget *w, const QString &name);
    MainWindow *m_w = nullptr;
};

void TestLecturer::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_lecturer"));
    QSettings().clear();
}

void TestLecturer::init()
{
    m_w = new MainWindow;
    m_w->session()->setDebounceMs(0);
    m_w->setMessagePrompt({});
    m_w->resize(1400, 900);
    m_w->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_w));
    QVERIFY(waitForResult());
}

void TestLecturer::cleanup()
{
    AppearanceManager::instance()->setAppearance(Appearance());
    delete m_w;
    m_w = nullptr;
}

bool TestLecturer::waitForResult(int ms)
{
    for (int i = 0; i < ms / 20; ++i) {
        const SnapshotPtr s = m_w->session()->snapshot();
        if (s && !m_w->session()->busy() && s->generation == m_w->session()->generation()) {
            QTest::qWait(30); // the queued replots
            return s->hasResult();
        }
        QTest::qWait(20);
    }
    return false;
}

QString TestLecturer::readText(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

void TestLecturer::screenshot(QWidget *w, const QString &name)
{
    const QString dir = qEnvironmentVariable("ATTNVIZ_SCREENSHOT_DIR");
    if (dir.isEmpty())
        return;
    QTest::qWait(100);
    w->grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png"));
}

// --- the Low list --------------------------------------------------------------------------------

void TestLecturer::escGivesTheLayoutBack()
{
    QVERIFY(applyPreset(QStringLiteral("causal-neg-inf")));
    QTest::qWait(100);
    auto *controls = m_w->findChild<QDockWidget *>(QStringLiteral("controlsDock"));
    auto *lesson = m_w->findChild<QDockWidget *>(QStringLiteral("lessonDock"));
    QVERIFY(controls && lesson);
    const int controlsWidth = controls->width(), lessonWidth = lesson->width();
    const QSize size = m_w->size();

    m_w->setPresentationMode(true);
    QTest::qWait(100);
    QVERIFY(!controls->isVisible());
    QTest::keyClick(QApplication::focusWidget() ? QApplication::focusWidget() : static_cast<QWidget *>(m_w), Qt::Key_Escape);
    QVERIFY(!m_w->presentationMode());
    QTest::qWait(200);
    QVERIFY(controls->isVisible());
    QVERIFY2(std::abs(controls->width() - controlsWidth) <= 2,
             qPrintable(QStringLiteral("Controls dock %1 px before, %2 px after").arg(controlsWidth).arg(controls->width())));
    QVERIFY2(std::abs(lesson->width() - lessonWidth) <= 2,
             qPrintable(QStringLiteral("Lesson dock %1 px before, %2 px after").arg(lessonWidth).arg(lesson->width())));
    QCOMPARE(m_w->size(), size);
}

void TestLecturer::stepButtonStaysPut()
{
    QVERIFY(applyPreset(QStringLiteral("multihead-wrapper")));
    QVERIFY(m_w->showView(QStringLiteral("pipeline")));
    QTest::qWait(100);
    PipelineView *p = m_w->pipelineView();
    QToolButton *next = nullptr;
    for (QToolButton *b : p->findChildren<QToolButton *>())
        if (b->text() == QStringLiteral("▶"))
            next = b;
    QVERIFY(next);
    auto *label = p->findChild<QLabel *>(QStringLiteral("pipelineStepLabel"));
    QVERIFY(label);
    QSet<int> xs;
    QStringList texts;
    for (int i = -1; i < p->stageCount(); ++i) {
        p->setCurrentStage(i);
        QTest::qWait(10);
        xs << next->mapTo(p, QPoint(0, 0)).x();
        texts << label->text();
    }
    QVERIFY2(xs.size() == 1, qPrintable(texts.join(QStringLiteral(" | "))));
}

void TestLecturer::lessonTextsNameWhatIsThere()
{
    // the controls a lesson names exist, by the label the Controls dock gives them
    QStringList labels;
    for (QLabel *l : m_w->controls()->findChildren<QLabel *>())
        labels << l->text();
    for (const Preset &p : presets())
        QVERIFY2(!p.explanation.contains(QLatin1String("Masked keys")), qPrintable(p.id));
    const Preset *renorm = findPreset(QStringLiteral("causal-renormalize"));
    QVERIFY(renorm && renorm->explanation.contains(QLatin1String("\"Mask method\"")));
    QVERIFY(labels.contains(QStringLiteral("Mask method")));

    PipelineView *p = m_w->pipelineView();
    const auto caption = [&](const QString &preset, PipelineView::StageKind kind) {
        if (!applyPreset(preset) || !m_w->showView(QStringLiteral("pipeline")))
            return QStringLiteral("(no %1)").arg(preset);
        QTest::qWait(50);
        const int i = p->indexOf(kind);
        return i < 0 ? QStringLiteral("(no stage)") : p->stageCaption(i);
    };
    // dropout: the rows do not sum to 1 after it
    const QString dropout = caption(QStringLiteral("dropout"), PipelineView::StageKind::Weights);
    QVERIFY2(dropout.startsWith(QLatin1String("Before dropout each row sums to 1")), qPrintable(dropout));
    QVERIFY2(dropout.contains(QLatin1String("no longer sums to 1")), qPrintable(dropout));
    // d_head 1: one column per head, not "h·1 … h·1+0"
    const QString concat = caption(QStringLiteral("multihead-split"), PipelineView::StageKind::Concat);
    QVERIFY2(concat.contains(QLatin1String("head h takes column h")) && !concat.contains(QStringLiteral("h·1")),
             qPrintable(concat));
    // W_o's width is d_out (seed 004's wrapper: d_out 2)
    const QString output = caption(QStringLiteral("multihead-split"), PipelineView::StageKind::Output);
    QVERIFY2(output.contains(QRegularExpression(QStringLiteral("d_out = \\d+ numbers"))) && !output.contains(QLatin1String("d_model =")),
             qPrintable(output));
}

void TestLecturer::predictionsDockShowsItsColumns()
{
    QVERIFY(!bundledModelDir(kBundledGpt2Arg).isEmpty());
    QVERIFY(applyPreset(QStringLiteral("tiny-induction")));
    auto *dock = m_w->findChild<QDockWidget *>(QStringLiteral("predictionsDock"));
    QVERIFY(dock && dock->isVisible());
    auto *text = m_w->predictionsView()->findChild<QTextBrowser *>(QStringLiteral("predictionsText"));
    QVERIFY(text);
    QTest::qWait(200);
    // every row of the lists, the id column last, within the panel: no horizontal scrolling
    QVERIFY(m_w->predictionsView()->html().contains(QLatin1String("#")));
    QVERIFY2(text->document()->idealWidth() <= text->viewport()->width() + 1,
             qPrintable(QStringLiteral("table %1 px in a %2 px panel").arg(text->document()->idealWidth()).arg(text->viewport()->width())));
    QVERIFY(!text->horizontalScrollBar()->isVisible());

    // a text longer than the model's 256 positions: the last token shown is not the text's last
    QString longText;
    while (longText.size() < 5000)
        longText += QStringLiteral("The cat sat on the mat and the dog lay by the door. ");
    m_w->setSentence(longText);
    QVERIFY(waitForResult());
    // the dock stays at the lesson's query until another is chosen: the last one shown
    m_w->predictionsView()->setSelectedPosition(m_w->session()->snapshot()->tq() - 1);
    const SnapshotPtr s = m_w->session()->snapshot();
    QVERIFY(s->totalQueryTokens > s->tq());
    QVERIFY(!m_w->predictionsView()->groups().empty());
    const QString heading = m_w->predictionsView()->groups().front().heading;
    QVERIFY2(!heading.contains(QLatin1String("(the last token)")), qPrintable(heading));
    QVERIFY2(heading.contains(QStringLiteral("the last of the %L1 shown").arg(s->tq())), qPrintable(heading));
}

void TestLecturer::partialCharacterPieceReadsAsBytes()
{
    // every entry of the bundled model's vocabulary scored once (topK = the vocabulary): the pieces that
    // are a space and the first bytes of a character ("␣âĻ" in GPT-2's spelling: " " E2 99, the start
    // of ♥) read as the token chips write them, never as the spelling's letters
    std::unique_ptr<Model> model;
    QVERIFY(openModelSource(QStringLiteral("bundled-gpt2"), model).ok());
    TraceRequest req;
    req.text = "I love you";
    req.topK = model->info().vocabulary;
    Trace<float> trace;
    QVERIFY(model->trace(req, trace).ok());
    QVERIFY(!trace.predictions.next.empty());
    const std::vector<TokenProb> &all = trace.predictions.next.back();
    QCOMPARE(int(all.size()), model->info().vocabulary);
    int partial = 0;
    for (const TokenProb &p : all) {
        const QString display = QString::fromStdString(p.display);
        if (display.contains(QLatin1String("\\x"))) {
            ++partial;
            // the bytes, never GPT-2's letters standing in for them ("Ļ" for 0x99)
            QVERIFY2(QRegularExpression(QStringLiteral("^([^\\\\]|\\\\x[0-9A-F]{2})+$")).match(display).hasMatch(),
                     qPrintable(QStringLiteral("%1: %2").arg(p.id).arg(display)));
        }
    }
    QVERIFY2(partial > 0, "the byte-level vocabulary has pieces of characters");
}

void TestLecturer::cutNamesTheModelsPositions()
{
    QString error;
    QVERIFY2(m_w->openModel(QStringLiteral("bundled-gpt2"), &error), qPrintable(error));
    QString longText;
    while (longText.size() < 5000)
        longText += QStringLiteral("The cat sat on the mat and the dog lay by the door. ");
    m_w->setSentence(longText);
    QVERIFY(waitForResult());
    // the dock stays at the lesson's query until another is chosen: the last one shown
    m_w->predictionsView()->setSelectedPosition(m_w->session()->snapshot()->tq() - 1);
    const SnapshotPtr s = m_w->session()->snapshot();
    QCOMPARE(s->tq(), 256);
    QVERIFY(m_w->showView(QStringLiteral("weights")));
    QTest::qWait(100);
    const QString title = m_w->heatmapView()->title();
    QVERIFY2(title.contains(QLatin1String("reads at most 256")) && !title.contains(QLatin1String("live limit")),
             qPrintable(title));
    const QString notice = m_w->findChild<QLabel *>(QStringLiteral("notice"))->text();
    QVERIFY2(notice.contains(QLatin1String("reads at most 256")) && !notice.contains(QLatin1String("live limit")),
             qPrintable(notice));
    // the word vectors' own limit still names itself
    m_w->useWordVectors();
    QVERIFY(waitForResult());
    const SnapshotPtr w = m_w->session()->snapshot();
    if (w->truncated())
        QVERIFY2(m_w->heatmapView()->title().contains(QLatin1String("live limit")), qPrintable(m_w->heatmapView()->title()));
}

namespace {

// How many pixels of `img` are within `tol` of `c` in every channel.
// The share of an image's pixels in colour (a colour map's), not black, white or grey: text, axes,
// hatching and the window's chrome are not.
double colouredShare(const QImage &img)
{
    const QImage im = img.convertToFormat(QImage::Format_RGB32);
    qint64 n = 0;
    for (int y = 0; y < im.height(); ++y)
        for (int x = 0; x < im.width(); ++x) {
            const QColor c(im.pixel(x, y));
            if (c.hsvSaturation() > 80 && c.value() > 40)
                ++n;
        }
    return double(n) / (double(im.width()) * im.height());
}

[[maybe_unused]] int pixelsLike(const QImage &img, const QColor &c, int tol = 8)
{
    int n = 0;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) {
            const QColor p = img.pixelColor(x, y);
            if (std::abs(p.red() - c.red()) <= tol && std::abs(p.green() - c.green()) <= tol && std::abs(p.blue() - c.blue()) <= tol)
                ++n;
        }
    return n;
}

} // namespace

void TestLecturer::disabledControlsLookDisabled()
{
    for (const Theme theme : {Theme::Light, Theme::HighContrast}) {
        Appearance a;
        a.theme = theme;
        AppearanceManager::instance()->setAppearance(a);
        QTest::qWait(20);
        auto *slider = m_w->controls()->findChild<QSlider *>(QStringLiteral("temperatureSlider"));
        QVERIFY(slider);
        QVERIFY(!slider->isEnabled()); // scaling is 1/√d_head
        // its form label and its value are greyed with it
        auto *form = slider->parentWidget()->findChild<QFormLayout *>();
        QVERIFY(form);
        int greyed = 0;
        for (QLabel *l : slider->parentWidget()->findChildren<QLabel *>())
            if (l->text() == QLatin1String("Temperature") || l->text().startsWith(QLatin1String("T = "))) {
                QVERIFY2(!l->isEnabled(), qPrintable(l->text()));
                ++greyed;
            }
        QCOMPARE(greyed, 2);
        // the groove is not filled with the highlight colour while disabled
        const QColor highlight = slider->palette().color(QPalette::Active, QPalette::Highlight);
        const QImage off = slider->grab().toImage();
        QCOMPARE(pixelsLike(off, highlight, 40), 0);
        m_w->controls()->findChild<QComboBox *>(QStringLiteral("scaleCombo"))
            ->setCurrentIndex(m_w->controls()->findChild<QComboBox *>(QStringLiteral("scaleCombo"))->findData(int(ScaleRule::Temperature)));
        QVERIFY(slider->isEnabled());
        const QImage on = slider->grab().toImage();
        QVERIFY2(pixelsLike(on, highlight, 40) > 0, "an enabled slider shows its filled groove");
        m_w->controls()->findChild<QComboBox *>(QStringLiteral("scaleCombo"))->setCurrentIndex(0);
    }
}

// The dark theme: row labels stood white (232) beside their disabled, grey fields (d_head, Random seed,
// Mask method …), as bright as an enabled control's. Every labelled row of the controls now greys its
// label with its field, and a disabled label is drawn darker than an enabled one.
void TestLecturer::disabledRowLabelsLookDisabled()
{
    Appearance a;
    a.theme = Theme::Dark;
    AppearanceManager::instance()->setAppearance(a);
    QTest::qWait(20);
    // the brightest pixel of a label's text on the dark window
    const auto brightest = [](QLabel *l) {
        const QImage img = l->grab().toImage();
        int most = 0;
        for (int y = 0; y < img.height(); ++y)
            for (int x = 0; x < img.width(); ++x)
                most = std::max(most, qGray(img.pixel(x, y)));
        return most;
    };
    int disabled = 0, enabledLight = 0, disabledLight = 0;
    for (const auto &[label, field] : labelledInputs(m_w->controls())) {
        QVERIFY2(label->isEnabled() == field->isEnabled(),
                 qPrintable(QStringLiteral("“%1”: label %2, field %3").arg(label->text()).arg(label->isEnabled()).arg(field->isEnabled())));
        if (!label->isVisible())
            continue;
        if (field->isEnabled())
            enabledLight = std::max(enabledLight, brightest(label));
        else {
            ++disabled;
            disabledLight = std::max(disabledLight, brightest(label));
        }
    }
    QVERIFY2(disabled >= 3, qPrintable(QString::number(disabled))); // d_head, Mask method, Random seed …
    QVERIFY2(disabledLight + 60 < enabledLight, qPrintable(QStringLiteral("disabled %1, enabled %2").arg(disabledLight).arg(enabledLight)));
    // a field enabled again takes its label with it
    screenshot(m_w, QStringLiteral("dark-disabled-labels"));
    auto *mode = m_w->controls()->findChild<QComboBox *>(QStringLiteral("projectionCombo"));
    auto *seed = m_w->controls()->findChild<QSpinBox *>(QStringLiteral("projectionSeedSpin"));
    QVERIFY(mode && seed);
    auto *seedLabel = qobject_cast<QLabel *>(seed->parentWidget()->findChild<QFormLayout *>()->labelForField(seed));
    QVERIFY(seedLabel && !seed->isEnabled() && !seedLabel->isEnabled()); // identity projections: no seed
    mode->setCurrentIndex(mode->findData(int(ProjectionMode::Random)));
    QVERIFY(seed->isEnabled());
    QVERIFY(seedLabel->isEnabled());
    mode->setCurrentIndex(mode->findData(int(ProjectionMode::Identity)));
    QVERIFY(!seedLabel->isEnabled());
}

void TestLecturer::highContrastShowsCheckBoxes()
{
    Appearance a;
    a.theme = Theme::HighContrast;
    AppearanceManager::instance()->setAppearance(a);
    QCheckBox on(QStringLiteral("enabled")), off(QStringLiteral("disabled"));
    off.setEnabled(false);
    for (QCheckBox *box : {&on, &off}) {
        box->resize(box->sizeHint());
        box->ensurePolished();
    }
    // the indicator (unchecked) of each: a frame that stands out from the black window
    const auto frameColour = [](QCheckBox &box) {
        QStyleOptionButton opt;
        opt.initFrom(&box);
        const QRect r = box.style()->subElementRect(QStyle::SE_CheckBoxIndicator, &opt, &box);
        const QImage img = box.grab().toImage();
        double best = 0;
        QColor colour;
        for (int x = r.left(); x <= r.right(); ++x) {
            const QColor c = img.pixelColor(x, r.top() + r.height() / 2);
            const double ratio = contrastRatio(c, Qt::black);
            if (ratio > best) {
                best = ratio;
                colour = c;
            }
        }
        return std::make_pair(best, colour);
    };
    const auto [enabledContrast, enabledColour] = frameColour(on);
    const auto [disabledContrast, disabledColour] = frameColour(off);
    QVERIFY2(enabledContrast >= 4.5, qPrintable(QString::number(enabledContrast)));
    QVERIFY2(disabledContrast >= 3.0, qPrintable(QString::number(disabledContrast)));
    // and the two states differ
    QVERIFY2(enabledColour != disabledColour, qPrintable(enabledColour.name() + QLatin1Char(' ') + disabledColour.name()));
}

void TestLecturer::countsInTheRightNumber()
{
    m_w->setSentence(QStringLiteral("ship"));
    m_w->setKeySentence(QStringLiteral("crew"));
    QVERIFY(waitForResult());
    const QString status = m_w->statusText();
    QVERIFY2(status.startsWith(QStringLiteral("1 token × 1 key · 1 head ·")), qPrintable(status));
    ComputeSettings s = m_w->controls()->settings();
    s.numHeads = 1;
    m_w->controls()->setSettings(s);
    m_w->session()->setHeadDisplay(HeadDisplay::All);
    m_w->setKeySentence(QString());
    m_w->setSentence(QStringLiteral("I must go back"));
    QVERIFY(waitForResult());
    QVERIFY(m_w->showView(QStringLiteral("weights")));
    QTest::qWait(50);
    const QString title = m_w->heatmapView()->title();
    QVERIFY2(!title.contains(QLatin1String("1 heads")), qPrintable(title));
    QVERIFY2(m_w->statusText().startsWith(QStringLiteral("4 tokens · 1 head ·")), qPrintable(m_w->statusText()));
}

void TestLecturer::tabsFitWithAModel()
{
    QString error;
    QVERIFY2(m_w->openModel(QStringLiteral("bundled-gpt2"), &error), qPrintable(error));
    QVERIFY(waitForResult());
    QTest::qWait(200);
    QTabBar *bar = m_w->tabs()->tabBar();
    int shown = 0;
    for (int i = 0; i < bar->count(); ++i) {
        if (!bar->isTabVisible(i))
            continue;
        ++shown;
        const QRect r = bar->tabRect(i);
        QVERIFY2(bar->rect().contains(r), qPrintable(QStringLiteral("%1: %2 px from %3 in a %4 px bar")
                                                          .arg(bar->tabText(i))
                                                          .arg(r.width())
                                                          .arg(r.left())
                                                          .arg(bar->width())));
    }
    QVERIFY(shown >= 8); // weights … rollout, compare
    for (QToolButton *arrow : bar->findChildren<QToolButton *>())
        QVERIFY2(!arrow->isVisible(), "no scroll arrows");
}

void TestLecturer::placeholderAndHintFit()
{
    SentenceEdit *key = m_w->keySentenceEdit();
    const int need = key->fontMetrics().horizontalAdvance(key->placeholderText()) + 2 * int(key->document()->documentMargin());
    QVERIFY2(need <= key->viewport()->width(),
             qPrintable(QStringLiteral("placeholder %1 px, editor %2 px").arg(need).arg(key->viewport()->width())));
    // one line tall: the editor shows the placeholder's whole line
    QVERIFY(key->viewport()->height() >= key->fontMetrics().height());

    auto *input = m_w->findChild<InputPanel *>();
    QVERIFY(input);
    QVERIFY(m_w->openModel(attnviz_test::fixtureModel(QStringLiteral("bert-tiny")), nullptr));
    QVERIFY2(!input->chipsHelpText().contains(QStringLiteral("␣")) && input->chipsHelpText().contains(QLatin1String("##")),
             qPrintable(input->chipsHelpText()));
    QVERIFY(m_w->openModel(attnviz_test::fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY2(input->chipsHelpText().contains(QStringLiteral("␣ marks a space")), qPrintable(input->chipsHelpText()));
}

void TestLecturer::hatchedAreaIsOneShape()
{
    QVERIFY(applyPreset(QStringLiteral("causal-neg-inf")));
    QVERIFY(m_w->showView(QStringLiteral("weights")));
    QTest::qWait(100);
    QTemporaryDir tmp;
    const QString svg = tmp.filePath(QStringLiteral("w.svg"));
    QString error;
    FigureOptions o;
    QVERIFY2(saveFigure(m_w->heatmapView()->plot(), svg, o, &error), qPrintable(error));
    const QString text = readText(svg);
    // the masked cells' grey fill: one path element for the whole upper triangle (no rectangle per
    // row whose edges a renderer anti-aliases into seams)
    const QString grey = maskFillColor().name();
    const QRegularExpression filled(QStringLiteral("fill=\"%1\"[^>]*>\\s*(<(path|rect|polygon)[^>]*>\\s*)+").arg(grey));
    int shapes = 0;
    for (auto it = filled.globalMatch(text); it.hasNext();) {
        const QString group = it.next().captured(0);
        shapes += int(group.count(QLatin1String("<path")) + group.count(QLatin1String("<rect")) + group.count(QLatin1String("<polygon")));
    }
    QVERIFY2(shapes == 1, qPrintable(QStringLiteral("%1 shapes filled %2").arg(shapes).arg(grey)));
}

void TestLecturer::commandLineIsQuiet()
{
    QTemporaryDir tmp;
    for (const QStringList &args :
         {QStringList{QStringLiteral("export"), QStringLiteral("--sentence"), QStringLiteral("ship"), QStringLiteral("--view"),
                      QStringLiteral("weights"), QStringLiteral("--out"), tmp.filePath(QStringLiteral("a.png"))},
          QStringList{QStringLiteral("export"), QStringLiteral("--sentence"), QStringLiteral("I must go back to my ship"),
                      QStringLiteral("--view"), QStringLiteral("grid"), QStringLiteral("--heads"), QStringLiteral("4"),
                      QStringLiteral("--out"), tmp.filePath(QStringLiteral("b.svg"))},
          QStringList{QStringLiteral("export"), QStringLiteral("--sentence"), QStringLiteral("I must go back to my ship"),
                      QStringLiteral("--view"), QStringLiteral("row"), QStringLiteral("--heads"), QStringLiteral("4"),
                      QStringLiteral("--mask"), QStringLiteral("causal"), QStringLiteral("--out"), tmp.filePath(QStringLiteral("c.png"))}}) {
        const attnviz_test::Run r = attnviz_test::runAttnviz(args);
        QCOMPARE(r.code, 0);
        QVERIFY2(!r.err.contains("QWidget::setMinimumSize") && !r.err.contains("Negative size"), r.err.constData());
    }
}

// --- what the lecturer asked for next ---------------------------------------------------------------

void TestLecturer::firstStartWelcomes()
{
    QSettings().remove(QStringLiteral("lessons/welcomed"));
    auto *dock = m_w->findChild<QDockWidget *>(QStringLiteral("lessonDock"));
    QVERIFY(dock && !dock->isVisible());
    QVERIFY(m_w->welcomeOnFirstStart());
    QVERIFY(dock->isVisible());
    QVERIFY(m_w->lessonPanel()->welcomeShown());
    const QString text = m_w->lessonPanel()->text();
    QVERIFY2(text.contains(QLatin1String("Start with the lessons")) && text.contains(QLatin1String("F1")), qPrintable(text));
    screenshot(m_w, QStringLiteral("welcome"));
    QCOMPARE(m_w->lessonPanel()->nextButton()->text(), QStringLiteral("First lesson ▶"));
    QVERIFY(m_w->lessonPanel()->nextButton()->isEnabled());
    QVERIFY(!m_w->lessonPanel()->previousButton()->isEnabled());
    // only the first start
    QVERIFY(!m_w->welcomeOnFirstStart());
    // the button starts the first lesson
    QTest::mouseClick(m_w->lessonPanel()->nextButton(), Qt::LeftButton);
    QCOMPARE(m_w->lessonPanel()->currentId(), presets().front().id);
    QVERIFY(!m_w->lessonPanel()->welcomeShown());
}

// `attnviz` and `attnviz --no-restore` on a true first start (XDG_CONFIG_HOME an empty folder: no
// settings file) welcome: the window writes lessons/welcomed when it shows the welcome in the Lesson
// column (welcomeOnFirstStart, checked above), read back from the settings file while it runs.
void TestLecturer::firstStartWelcomesFromTheCommandLine_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addRow("attnviz") << QStringList{};
    QTest::addRow("--no-restore") << QStringList{QStringLiteral("--no-restore")};
    QTest::addRow("--no-restore --theme dark")
        << QStringList{QStringLiteral("--no-restore"), QStringLiteral("--theme"), QStringLiteral("dark")};
}

void TestLecturer::firstStartWelcomesFromTheCommandLine()
{
    QFETCH(QStringList, args);
    QTemporaryDir dir;
    const QString conf = dir.filePath(QStringLiteral("attnviz/attnviz.conf"));
    QVERIFY(!QFile::exists(conf));
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.path());
    p.setProcessEnvironment(env);
    p.start(QString::fromUtf8(ATTNVIZ_BINARY), args);
    QVERIFY(p.waitForStarted());
    const auto welcomed = [&] { return QSettings(conf, QSettings::IniFormat).value(QStringLiteral("lessons/welcomed")).toBool(); };
    QElapsedTimer t;
    t.start();
    while (!welcomed() && p.state() == QProcess::Running && t.elapsed() < 30000)
        QTest::qWait(100);
    const bool running = p.state() == QProcess::Running;
    p.kill();
    p.waitForFinished();
    QVERIFY2(running, p.readAllStandardError().constData());
    QVERIFY2(welcomed(), qPrintable(QStringLiteral("no welcome after %1 ms").arg(t.elapsed())));
}

void TestLecturer::nextAndPreviousLesson()
{
    const std::vector<Preset> &all = presets();
    QVERIFY(all.size() >= 3);
    QVERIFY(m_w->stepLesson(1));
    QCOMPARE(m_w->lessonPanel()->currentId(), all[0].id);
    QTest::mouseClick(m_w->lessonPanel()->nextButton(), Qt::LeftButton);
    QCOMPARE(m_w->lessonPanel()->currentId(), all[1].id);
    // the keys: Alt+Right, Alt+Left (window shortcuts, whatever has the focus)
    m_w->activateWindow();
    m_w->sentenceEdit()->setFocus();
    QTest::keyClick(m_w->sentenceEdit(), Qt::Key_Right, Qt::AltModifier);
    QCOMPARE(m_w->lessonPanel()->currentId(), all[2].id);
    QTest::keyClick(m_w->sentenceEdit(), Qt::Key_Left, Qt::AltModifier);
    QCOMPARE(m_w->lessonPanel()->currentId(), all[1].id);
    QTest::mouseClick(m_w->lessonPanel()->previousButton(), Qt::LeftButton);
    QCOMPARE(m_w->lessonPanel()->currentId(), all[0].id);
    QVERIFY(!m_w->lessonPanel()->previousButton()->isEnabled());
    QVERIFY(!m_w->stepLesson(-1));
    // an edited lesson still steps from itself
    ComputeSettings s = m_w->controls()->settings();
    s.numHeads = 2;
    m_w->controls()->setSettings(s);
    QVERIFY(m_w->lessonPanel()->currentId().isEmpty());
    QVERIFY(m_w->stepLesson(1));
    QCOMPARE(m_w->lessonPanel()->currentId(), all[1].id);
    // the last lesson has no next
    QVERIFY(m_w->applyPreset(all.back().id));
    QVERIFY(!m_w->lessonPanel()->nextButton()->isEnabled());
    QVERIFY(!m_w->stepLesson(1));
}

// Presenting, the Lesson column had no ◀ ▶ (only Alt+→ / Alt+←): a lecturer with a mouse or a clicker
// could not step. ◀ ▶ now sit beside the lesson list while presenting (no line of the text's height),
// step the lessons, and go when presenting ends.
void TestLecturer::presentingKeepsLessonSteps()
{
    const std::vector<Preset> &all = presets();
    QVERIFY(applyPreset(all[1].id));
    m_w->setPresentationMode(true);
    m_w->setWindowState(Qt::WindowNoState);
    m_w->setGeometry(QRect(0, 0, 1280, 720));
    QTest::qWait(150);
    LessonPanel *panel = m_w->lessonPanel();
    auto *next = panel->findChild<QToolButton *>(QStringLiteral("presentNextLesson"));
    auto *previous = panel->findChild<QToolButton *>(QStringLiteral("presentPreviousLesson"));
    QVERIFY(next && previous);
    QVERIFY(next->isVisible() && previous->isVisible());
    QVERIFY(next->isEnabled() && previous->isEnabled());
    // on the list's line
    auto *list = panel->findChild<QComboBox *>(QStringLiteral("presetCombo"));
    QVERIFY(list);
    const QRect listBox(list->mapTo(panel, QPoint(0, 0)), list->size());
    const QRect nextBox(next->mapTo(panel, QPoint(0, 0)), next->size());
    QVERIFY2(nextBox.top() < listBox.bottom() && nextBox.bottom() > listBox.top(),
             qPrintable(QStringLiteral("▶ at y %1–%2, the list at %3–%4").arg(nextBox.top()).arg(nextBox.bottom()).arg(listBox.top()).arg(listBox.bottom())));
    QVERIFY(nextBox.right() <= panel->width());
    screenshot(m_w, QStringLiteral("presenting-lesson-steps"));
    QTest::mouseClick(next, Qt::LeftButton);
    QVERIFY(waitForResult());
    QCOMPARE(panel->currentId(), all[2].id);
    QTest::mouseClick(previous, Qt::LeftButton);
    QVERIFY(waitForResult());
    QTest::mouseClick(previous, Qt::LeftButton);
    QVERIFY(waitForResult());
    QCOMPARE(panel->currentId(), all[0].id);
    QVERIFY(!previous->isEnabled()); // the first lesson
    m_w->setPresentationMode(false);
    QVERIFY(!next->isVisible() && !previous->isVisible());
    QVERIFY(panel->nextButton()->isVisible());
}

void TestLecturer::helpMenuOpensTheGuide()
{
    QMenu *help = nullptr;
    for (QAction *a : m_w->menuBar()->actions())
        if (a->menu() && a->text().remove(QLatin1Char('&')) == QLatin1String("Help"))
            help = a->menu();
    QVERIFY(help);
    auto *guide = m_w->findChild<QAction *>(QStringLiteral("guideAction"));
    QVERIFY(guide && help->actions().contains(guide));
    QCOMPARE(guide->shortcut(), QKeySequence(Qt::Key_F1));
    QVERIFY(!m_w->guideDialog());
    m_w->activateWindow();
    QTest::keyClick(m_w, Qt::Key_F1);
    QVERIFY(m_w->guideDialog() && m_w->guideDialog()->isVisible());
    const QString text = m_w->guideDialog()->browser()->toPlainText();
    for (const char *heading : {"The views and how to read them", "Lessons", "Presenting", "Undo", "Keyboard shortcuts"})
        QVERIFY2(text.contains(QLatin1String(heading)), heading);
    // every view the tabs have is explained by its tab's name
    for (int i = 0; i < m_w->tabs()->count(); ++i) {
        const QString name = m_w->tabs()->tabText(i);
        QVERIFY2(text.contains(name), qPrintable(name));
    }
    // Keyboard shortcuts opens the guide at that heading
    QTest::qWait(50);
    QVERIFY(m_w->guideDialog()->showSection(QStringLiteral("Keyboard shortcuts")));
    const QTextCursor c = m_w->guideDialog()->browser()->textCursor();
    QCOMPARE(c.block().text(), QStringLiteral("Keyboard shortcuts"));
    QVERIFY(m_w->guideDialog()->browser()->verticalScrollBar()->value() > 0);
    screenshot(m_w->guideDialog(), QStringLiteral("guide-shortcuts"));
}

void TestLecturer::guideListsEveryShortcut()
{
    const QString guide = GuideDialog::markdown();
    QVERIFY(guide.size() > 2000);
    // every shortcut of every menu, and the window's own keys (presentation steps, Esc)
    QStringList missing, listed;
    const auto check = [&](const QKeySequence &k, const QString &what) {
        if (k.isEmpty())
            return;
        const QString key = k.toString(QKeySequence::PortableText);
        listed << key;
        if (!guide.contains(QLatin1Char('`') + key + QLatin1Char('`')))
            missing << QStringLiteral("%1 (%2)").arg(key, what);
    };
    for (QAction *a : m_w->findChildren<QAction *>()) {
        if (a->menu() || a->shortcuts().isEmpty())
            continue;
        bool any = false;
        for (const QKeySequence &k : a->shortcuts())
            any = any || guide.contains(QLatin1Char('`') + k.toString(QKeySequence::PortableText) + QLatin1Char('`'));
        if (!any)
            check(a->shortcut(), a->text());
        else
            listed << a->shortcut().toString(QKeySequence::PortableText);
    }
    for (QShortcut *s : m_w->findChildren<QShortcut *>())
        check(s->key(), QStringLiteral("shortcut"));
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QStringLiteral(", "))));
    for (const char *key : {"F11", "F1", "Esc", "Right", "Left", "Ctrl+Z", "Ctrl+Shift+Z", "Alt+Right", "Alt+Left"})
        QVERIFY2(listed.contains(QLatin1String(key)), key);
    QVERIFY(guide.contains(QLatin1String("`Ctrl+=`")) && guide.contains(QLatin1String("`Ctrl+-`")));
    QVERIFY(guide.contains(QLatin1String("mouse wheel")));
}

void TestLecturer::readmeTourIsTheGuide()
{
    const QString readme = readText(QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/README.md")));
    const QString guide = readText(QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/resources/guide/guide.md")));
    QVERIFY(!readme.isEmpty() && !guide.isEmpty());
    QCOMPARE(GuideDialog::markdown(), guide); // the program carries the file as it is
    const QString begin = QStringLiteral("<!-- guide: begin (resources/guide/guide.md, one level down) -->\n");
    const QString end = QStringLiteral("<!-- guide: end -->");
    const qsizetype a = readme.indexOf(begin), b = readme.indexOf(end);
    QVERIFY2(a >= 0 && b > a, "README marks the guide");
    // the README's copy is the guide with every heading one level deeper (## → ###)
    QString expected = guide;
    expected.replace(QRegularExpression(QStringLiteral("^(#+) "), QRegularExpression::MultilineOption), QStringLiteral("#\\1 "));
    QCOMPARE(readme.mid(a + begin.size(), b - a - begin.size()), expected);
    // measurement history lives with the benchmarks, not in the user's README
    QVERIFY(!readme.contains(QRegularExpression(QStringLiteral("issue \\d+"))));
    QVERIFY(!readme.contains(QLatin1String("## Performance")));
    QVERIFY(readText(QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/tests/bench/README.md"))).contains(QLatin1String("Performance")));
}

void TestLecturer::undoRedoControlsAndChips()
{
    QUndoStack *undo = m_w->undoStack();
    QCOMPARE(undo->count(), 0);
    // a control set by hand
    auto *heads = m_w->controls()->findChild<QSpinBox *>(QStringLiteral("headsSpin"));
    QVERIFY(heads);
    QCOMPARE(heads->value(), 1);
    heads->setValue(2);
    QCOMPARE(undo->count(), 1);
    QCOMPARE(undo->undoText(), QStringLiteral("Change Number of heads"));
    auto *undoAction = m_w->findChild<QAction *>(QStringLiteral("undoAction"));
    auto *redoAction = m_w->findChild<QAction *>(QStringLiteral("redoAction"));
    QVERIFY(undoAction && redoAction);
    QCOMPARE(undoAction->shortcut(), QKeySequence(QStringLiteral("Ctrl+Z")));
    QCOMPARE(redoAction->shortcut(), QKeySequence(QStringLiteral("Ctrl+Shift+Z")));
    m_w->tabs()->currentWidget()->setFocus(); // not an editor: Ctrl+Z is the window's
    QTest::keyClick(m_w->tabs()->currentWidget(), Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(m_w->controls()->settings().numHeads, 1);
    QCOMPARE(heads->value(), 1);
    QTest::keyClick(m_w->tabs()->currentWidget(), Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(m_w->controls()->settings().numHeads, 2);
    QVERIFY(waitForResult());
    QCOMPARE(m_w->session()->snapshot()->settings.numHeads, 2); // the views follow

    // a slider dragged is one step
    auto *scale = m_w->controls()->findChild<QComboBox *>(QStringLiteral("scaleCombo"));
    scale->setCurrentIndex(scale->findData(int(ScaleRule::Temperature)));
    const int before = undo->count();
    auto *slider = m_w->controls()->findChild<QSlider *>(QStringLiteral("temperatureSlider"));
    const double t0 = m_w->controls()->settings().temperature;
    for (int v : {110, 120, 130, 140})
        slider->setValue(v);
    QCOMPARE(undo->count(), before + 1);
    undo->undo();
    QCOMPARE(m_w->controls()->settings().temperature, t0);

    // a chip click (padding) and its mask, as one step
    QVERIFY(waitForResult());
    const ComputeSettings beforeChip = m_w->controls()->settings();
    emit m_w->queryChips()->tokenClicked(2);
    QCOMPARE(m_w->session()->paddedKeys(), std::set<int>{2});
    QCOMPARE(m_w->controls()->settings().mask, MaskChoice::Padding);
    QCOMPARE(undo->undoText(), QStringLiteral("Pad token 2"));
    undo->undo();
    QVERIFY(m_w->session()->paddedKeys().empty());
    QCOMPARE(m_w->controls()->settings().mask, beforeChip.mask);
    undo->redo();
    QCOMPARE(m_w->session()->paddedKeys(), std::set<int>{2});
    QCOMPARE(m_w->controls()->settings().mask, MaskChoice::Padding);

    // a lesson starts afresh
    QVERIFY(m_w->applyPreset(QStringLiteral("journey-scores")));
    QCOMPARE(undo->count(), 0);
}

void TestLecturer::undoGivesTheMaskedWordBack()
{
    QVERIFY(m_w->openModel(attnviz_test::fixtureModel(QStringLiteral("bert-tiny")), nullptr));
    const QString text = QStringLiteral("The capital of France is Paris.");
    m_w->setSentence(text);
    QVERIFY(waitForResult());
    SnapshotPtr s = m_w->session()->snapshot();
    int paris = -1;
    for (int i = 0; i < int(s->trace->tokens.size()); ++i)
        if (QString::fromStdString(s->trace->tokens[size_t(i)].text).compare(QLatin1String("paris"), Qt::CaseInsensitive) == 0)
            paris = i;
    QVERIFY2(paris > 0, "bert-tiny knows Paris");
    // a click makes it [MASK], a second click gives the word back
    emit m_w->queryChips()->tokenClicked(paris);
    QCOMPARE(m_w->sentenceEdit()->toPlainText(), QStringLiteral("The capital of France is [MASK]."));
    QVERIFY(waitForResult());
    s = m_w->session()->snapshot();
    int mask = -1;
    for (int i = 0; i < int(s->trace->tokens.size()); ++i)
        if (QString::fromStdString(s->trace->tokens[size_t(i)].text) == QLatin1String("[MASK]"))
            mask = i;
    QVERIFY(mask > 0);
    emit m_w->queryChips()->tokenClicked(mask);
    QCOMPARE(m_w->sentenceEdit()->toPlainText(), text);
    // and undo does too: the window's (Edit ▸ Undo) and the editor's own (Ctrl+Z while typing)
    QVERIFY(waitForResult());
    emit m_w->queryChips()->tokenClicked(paris);
    QCOMPARE(m_w->sentenceEdit()->toPlainText(), QStringLiteral("The capital of France is [MASK]."));
    m_w->undoStack()->undo();
    QCOMPARE(m_w->sentenceEdit()->toPlainText(), text);
    m_w->undoStack()->redo();
    QCOMPARE(m_w->sentenceEdit()->toPlainText(), QStringLiteral("The capital of France is [MASK]."));
    m_w->sentenceEdit()->setFocus();
    QTest::keyClick(m_w->sentenceEdit(), Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(m_w->sentenceEdit()->toPlainText(), text);
}

void TestLecturer::lessonAsSlides()
{
    QTemporaryDir tmp;
    QString error;
    QList<Slide> slides;
    SlideOptions o;
    o.size = QSize(1280, 720);
    const QStringList files = writeLessonSlides(*m_w, QStringLiteral("journey-scores"), tmp.path(), o, &error, &slides);
    QVERIFY2(!files.isEmpty(), qPrintable(error));
    QVERIFY(!m_w->presentationMode());
    // the lesson's view, then one slide per pipeline step; PNGs, then one PDF
    const Preset *p = findPreset(QStringLiteral("journey-scores"));
    const int steps = m_w->pipelineView()->stageCount();
    QVERIFY(steps >= 8);
    const int expected = (p->view == QLatin1String("pipeline") ? 0 : 1) + steps;
    QCOMPARE(slides.size(), expected);
    QCOMPARE(files.size(), expected + 1);
    QVERIFY(files.last().endsWith(QLatin1String("journey-scores.pdf")));
    for (int i = 0; i < expected; ++i) {
        const QImage img(files[i]);
        QCOMPARE(img.size(), o.size);
        // presentation styling: the high-contrast theme's black background fills most of it
        QVERIFY2(pixelsLike(img.scaled(320, 180), Qt::black, 4) > 320 * 180 / 4, qPrintable(files[i]));
    }
    QVERIFY(slides.at(expected - 1).title.startsWith(QStringLiteral("Step %1 of %1").arg(steps)));
    QVERIFY(QImage(files[expected - 2]) != QImage(files[expected - 1]));
    // a step's slide is its stage alone at the slide's width, not the window: the weights' colour map
    // covers a third of the slide and more (the whole window with every stage so far, small: 7 %)
    int weights = -1;
    for (int i = 0; i < expected; ++i)
        if (slides[i].title.endsWith(QLatin1String("Attention weights")))
            weights = i;
    QVERIFY(weights >= 0);
    const double share = colouredShare(QImage(files[weights]));
    QVERIFY2(share > 0.3, qPrintable(QString::number(share)));
    QFile pdf(files.last());
    QVERIFY(pdf.open(QIODevice::ReadOnly));
    const QByteArray bytes = pdf.readAll();
    QVERIFY(bytes.startsWith("%PDF"));
    QCOMPARE(int(bytes.count("/Type /Page\n") + bytes.count("/Type /Page ") + bytes.count("/Type /Page/")), expected);
}

void TestLecturer::lessonAsSlidesFromTheCommandLine()
{
    QTemporaryDir tmp;
    const attnviz_test::Run r = attnviz_test::runAttnviz(
        {QStringLiteral("export"), QStringLiteral("--preset"), QStringLiteral("causal-neg-inf"), QStringLiteral("--slides"),
         tmp.path(), QStringLiteral("--slide-size"), QStringLiteral("1280x720")});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY2(!r.err.contains("plugin does not support"), r.err.constData());
    const QStringList files = QString::fromUtf8(r.out).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QVERIFY(files.size() >= 9);
    QVERIFY(files.last().endsWith(QLatin1String("causal-neg-inf.pdf")));
    QCOMPARE(QImage(files.first()).size(), QSize(1280, 720));
    // bad input: one line, exit 2
    const attnviz_test::Run bad = attnviz_test::runAttnviz(
        {QStringLiteral("export"), QStringLiteral("--preset"), QStringLiteral("no-such-lesson"), QStringLiteral("--slides"), tmp.path()});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("no-such-lesson"), bad.err.constData());
}

QTEST_MAIN(TestLecturer)
#include "tst_lecturer.moc"
