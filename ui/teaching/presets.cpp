// SPDX-License-Identifier: GPL-3.0-or-later
#include "teaching/presets.h"

#include "teaching/seedtables.h"

#include "bundledmodel.h"

#include <QCoreApplication>
#include <QRegularExpression>

namespace attnviz::ui {

namespace {

QString tr(const char *s) { return QCoreApplication::translate("Presets", s); }

const QString kOdyssey = QStringLiteral("I must go back to my ship and to my crew");
const QString kAmazon = QStringLiteral("We process and ship your order");

// Identity projections, one head, softmax: the settings every hand-computed example starts from.
ComputeSettings plain(ScaleRule scale)
{
    ComputeSettings s;
    s.numHeads = 1;
    s.scaleRule = scale;
    s.normalization = Normalization::Softmax;
    s.projection = ProjectionMode::Identity;
    return s;
}

// Seed 001's trainable-weight classes: one head of width 2 from 3-d inputs, no W_o, 1/sqrt(d_head).
ComputeSettings trainable(InitScheme scheme, quint64 seed)
{
    ComputeSettings s = plain(ScaleRule::InvSqrtDHead);
    s.projection = ProjectionMode::Random;
    s.initScheme = scheme;
    s.projectionSeed = seed;
    s.dHead = 2;
    s.outWidth = -1;
    return s;
}

// The lessons on the bundled trained model. Every number a paragraph quotes is what the
// window shows for its sentence: tst_lessons reads each one back from the views and finds it here.
const QString kTinyPrevious = QStringLiteral("The cat sat on the mat and looked out of the window at the rain.");
const QString kTinyTwice = QStringLiteral("My friend keeps seven green apples in a wooden box. "
                                          "My friend keeps seven green apples in a wooden box.");
const QString kTinyHalfTyped = QStringLiteral("My friend keeps seven green apples in a wooden box. "
                                              "My friend keeps seven green apples in a");
const QString kTinyNothingToCopy = QStringLiteral("The old sailor told a long story about his ship.");

// How the model came by its induction heads, said plainly in each lesson that shows them.
QString tinyDrill()
{
    return tr("attnviz-tiny was not trained on natural text alone: for its first 3,000 steps it saw only random "
              "tokens said twice, with its MLPs switched off; afterwards half of its training rows were text, a "
              "fifth were text with a span copied again later, and 30 % were random tokens said twice. Without "
              "that drill no induction head formed within the training budget "
              "(resources/models/attnviz-tiny/MANIFEST.md).");
}

void addTinyLessons(std::vector<Preset> &out)
{
    Preset p;
    p.seed = kTinySeed;
    p.model = QStringLiteral("bundled-gpt2");
    p.display = HeadDisplay::One;
    p.view = QStringLiteral("weights");

    p.id = QStringLiteral("tiny-previous-token");
    p.title = tr("A head that looks at the previous word");
    p.explanation = tr(
        "attnviz-tiny, the first model that came with attnviz (Model ▸ attnviz-tiny GPT-2), is a small GPT-2 "
        "(2 layers × 4 heads) trained on the "
        "same Debian-packaged texts as the word vectors. Layer 0, head 1: the bright cells lie one step below the "
        "diagonal, so every token looks at the token before it (the view opens on the sentence's last rows; "
        "double-click for all of it). \"rain\" puts 0.998 of its attention on \"the\", "
        "and in all 16 rows after the first the brightest key is the previous token (the mean of that diagonal "
        "is the head's previous-token score, in the Layers tab). "
        "Nobody programmed this: training found that knowing the word before is useful, and layer 1 builds on "
        "it. Heads 0, 2 and 3 do not: 2 and 3 look mostly at the token itself.");
    p.sentence = kTinyPrevious;
    p.layer = 0;
    p.head = 1;
    p.query = 15;
    p.zoom = QRect(7, 8, 10, 9); // keys 7–16, queries 8–16: the diagonal below, the cells large enough for numbers
    out.push_back(p);
    p.zoom = QRect();

    p.id = QStringLiteral("tiny-induction");
    p.title = tr("Induction: type a sentence twice");
    p.explanation = tr(
        "The sentence said twice. Layer 1, head 0, the query \"a\" in the second copy: its brightest key, 0.80 of "
        "its attention, is \"wood\", the token that came AFTER \"a\" in the first copy; and the model predicts "
        "\"wood\" after this \"a\" with p = 48.8 % (Predictions dock). The head finds the earlier "
        "occurrence of the current token (layer 0's previous-token head has told \"wood\" that \"a\" came before "
        "it) and looks one token ahead of it: an induction head (Olsson et al. 2022). The view opens on the "
        "second copy's last rows and the first copy's columns (double-click or Home: the whole text): in every "
        "row shown the brightest key is the token after that token's first occurrence, a bright stripe one "
        "column right of the repeat. This is how a language model continues a pattern it has only seen once, in "
        "its own input. The Lens tab (the logit lens) shows after which layer \"wood\" becomes the top guess, and the "
        "DLA tab (direct logit attribution) which heads add most to its logit. %1")
                        .arg(tinyDrill());
    p.sentence = kTinyTwice;
    p.layer = 1;
    p.head = 0;
    p.query = 23;
    p.zoom = QRect(5, 19, 10, 9); // keys 5–14, queries 19–27: the stripe, the cells large enough for numbers
    out.push_back(p);
    p.zoom = QRect();

    p.id = QStringLiteral("tiny-first-token");
    p.title = tr("Where attention goes when there is nothing to look at");
    p.explanation = tr(
        "A sentence with nothing to copy. Layer 1, head 2 looks for an earlier occurrence of the current token, "
        "and here there is none; yet softmax must give out all of the attention. The head parks it on the first "
        "token: its column lights up (its mean is the head's first-token score, in the Layers tab), and the "
        "final \".\" gives it 0.88. The first token is seen by every query, so it serves as a resting place (an "
        "\"attention sink\"). Said twice (the induction lesson), the same head has something to copy and its "
        "first-token score drops.");
    p.sentence = kTinyNothingToCopy;
    p.layer = 1;
    p.head = 2;
    p.query = 12;
    out.push_back(p);

    p.id = QStringLiteral("tiny-layers");
    p.title = tr("How attention changes from layer to layer");
    p.explanation = tr(
        "Every head of both layers at once, each with its role scores. Layer 0 prepares: head 1 is the "
        "previous-token head (%1 on this text; no layer 1 head scores above %2). Layer 1 uses it: heads 0, 2 "
        "and 3 are induction heads, scoring %3, %4 and %5 on 50 random tokens said twice (the score measured "
        "once per model), while no layer 0 head scores above %6: one layer alone cannot do induction, it needs "
        "the previous token written into each position first. Sort by a role to rank the heads; click a "
        "thumbnail to open that head in the Weights tab. %7")
                        .arg(QStringLiteral("0.996"), QStringLiteral("0.13"), QStringLiteral("0.96"),
                             QStringLiteral("0.92"), QStringLiteral("0.96"), QStringLiteral("0.02"), tinyDrill());
    p.sentence = kTinyTwice;
    p.layer = 1;
    p.head = 0;
    p.query = 23;
    p.view = QStringLiteral("headRoles");
    out.push_back(p);

    p.id = QStringLiteral("tiny-predictions");
    p.title = tr("What the model predicts next");
    p.explanation = tr(
        "The Predictions dock lists the most likely next tokens. The second copy is typed only up to \"a\": the "
        "model predicts \"wood\" with p = 48.8 %, copied from the first copy (the induction heads of layer 1 look "
        "at \"wood\"). Hover the first \"a\" (position 9): there it had nothing to copy and guessed from the "
        "statistics of its training text, none above 1.54 %, and gave \"wood\" only 0.31 %. Hover \"seven\" "
        "(position 4): \"years\" 16.7 %, \"times\" 7.80 %, \"days\" 6.02 %, the Bible's favourite numbers, "
        "while the real \"green\" is far down the list. %1")
                        .arg(tinyDrill());
    p.sentence = kTinyHalfTyped;
    p.layer = 1;
    p.head = 0;
    p.query = 23;
    p.view = QStringLiteral("weights");
    out.push_back(p);
}

// The lessons on attnviz-tiny 2 (`bundled`, a Llama). As with attnviz-tiny's, every number a
// paragraph quotes is what the window shows: tst_lessons2 reads each one back from the views.
const QString kTiny2Rotary = QStringLiteral("The dog chased the cat, and the cat chased the dog.");
const QString kTiny2HalfTyped = QStringLiteral("He drank cold milk. He drank cold");

// How attnviz-tiny 2 was trained, said once for the lessons that show what training made.
QString tiny2Training()
{
    return tr("attnviz-tiny 2 learned this from text: after 1,000 steps of a drill on short segments (2 to 8 "
              "tokens) of random tokens and common words said twice, it read the Debian-packaged texts with "
              "spans of them copied again later (resources/models/attnviz-tiny-2/MANIFEST.md).");
}

void addTiny2Lessons(std::vector<Preset> &out)
{
    Preset p;
    p.seed = kTiny2Seed;
    p.model = QStringLiteral("bundled");
    p.display = HeadDisplay::One;

    p.id = QStringLiteral("tiny2-grouped-query");
    p.title = tr("Grouped-query attention: heads that share keys and values");
    p.explanation = tr(
        "Each layer of attnviz-tiny 2 has 8 query heads but only 2 key/value heads, as in Llama, Qwen and "
        "Mistral: heads 0–3 share one (\"kv 0\" under the thumbnails), heads 4–7 the other. Each head keeps "
        "its own queries, so sharing does not make heads alike. Layer 0, both on kv 0: head 1 looks at the "
        "token itself (self score %1), head 3 at the tokens before it and the first token (previous-token %2, "
        "first-token %3). Layer 1: heads 1 and 3 are both induction heads on 50 random tokens said twice (%4 "
        "and %5), yet on this sentence head 1 parks its attention on the first token (first-token score %6) "
        "where head 3 copies (%7).")
                        .arg(QStringLiteral("0.983"), QStringLiteral("0.378"), QStringLiteral("0.403"),
                             QStringLiteral("0.953"), QStringLiteral("0.978"), QStringLiteral("0.834"),
                             QStringLiteral("0.524"));
    p.sentence = kTinyTwice;
    p.layer = 1;
    p.head = 3;
    p.query = 24;
    p.view = QStringLiteral("headRoles");
    out.push_back(p);

    p.id = QStringLiteral("tiny2-rotary");
    p.title = tr("Rotary positions: the same words at the same distance");
    p.explanation = tr(
        "attnviz-tiny 2 has no position embeddings. Instead, after the projections, every query and key is "
        "turned, one pair of dimensions at a time, by angles that grow with its position (the pipeline's "
        "\"Q rotated\" and \"K rotated\" stages; click a cell for the angle). The dot product of a turned query "
        "with a turned key then depends on how far apart the two tokens are, not on where they stand. \"the "
        "cat\" comes twice here, at positions 5–6 and 9–10. In layer 0, where each token's vector is still its "
        "own embedding, head 2 scores the second \"cat\" against the \"the\" before it at %1 (the outlined "
        "cell), and the first \"cat\" against its \"the\", four positions earlier, at %1 too. In later layers the "
        "vectors carry their context and the two scores part.")
                        .arg(QStringLiteral("25.09"));
    p.sentence = kTiny2Rotary;
    p.layer = 0;
    p.head = 2;
    p.query = 10;
    p.view = QStringLiteral("pipeline");
    p.stage = QStringLiteral("scores");
    p.column = 9;
    out.push_back(p);
    p.stage.clear();
    p.column = -1;

    p.id = QStringLiteral("tiny2-induction");
    p.title = tr("Induction on your own sentence said twice");
    p.explanation = tr(
        "Type any sentence twice. Layer 1, head 3, the query \"a\" in the second copy: its brightest key, %1 of "
        "its attention, is \"wood\", the token that came AFTER \"a\" the first time, and the model predicts "
        "\"wood\" after this \"a\" with p = %2 (Predictions dock). The head finds the earlier occurrence of the "
        "current token and looks one token ahead of it: an induction head (Olsson et al. 2022). The view opens "
        "on the second copy's last rows and the first copy's columns (double-click or Home: the whole text): "
        "the bright stripe lies one column right of the repeat. Try your own sentence: the model copies on "
        "text it never saw, not only on drilled tokens. %3")
                        .arg(QStringLiteral("0.90"), QStringLiteral("98.9 %"), tiny2Training());
    p.sentence = kTinyTwice;
    p.layer = 1;
    p.head = 3;
    p.query = 24;
    p.view = QStringLiteral("weights");
    p.zoom = QRect(6, 19, 10, 10); // keys 6–15, queries 19–28: the stripe, the cells large enough for numbers
    out.push_back(p);
    p.zoom = QRect();

    p.id = QStringLiteral("tiny2-first-token");
    p.title = tr("The first-token sink");
    p.explanation = tr(
        "A sentence with nothing to copy. Layer 1, head 1 shares its keys and values with the induction head 3, "
        "and here it has nothing to find; softmax must still give out all of its attention, and the head "
        "parks it on the first token, the <|endoftext|> that the tokenizer puts before every text: its column "
        "lights up (its mean is the head's first-token score, in the Layers tab), and the final \".\" gives it "
        "%1. The first token is seen by every query, so trained models use it as a resting place (an "
        "\"attention sink\", Xiao et al. 2023); the models people run keep that token for this reason.")
                        .arg(QStringLiteral("0.76"));
    p.sentence = kTinyNothingToCopy;
    p.layer = 1;
    p.head = 1;
    p.query = 13;
    p.view = QStringLiteral("weights");
    p.zoom = QRect(0, 6, 8, 8); // keys 0–7, queries 6–13: the first token's column, large enough for numbers
    out.push_back(p);
    p.zoom = QRect();

    p.id = QStringLiteral("tiny2-lens");
    p.title = tr("Where in the layers the copied word appears");
    p.explanation = tr(
        "The second copy typed up to \"cold\": the model predicts \"milk\" with p = %1 (Predictions dock). "
        "The Lens tab (the logit lens) reads the residual stream after every layer as if it were the last. At "
        "\"cold\": after layer 0 the top guess is \"cold\" itself (the stream still holds mostly the token's "
        "own embedding); after layer 1 it is \"milk\", and it stays through the last layer. The copy is "
        "written into the stream by layer 1's induction heads; layer 0 alone cannot copy. Hover a cell for its "
        "top 5; beside the grid, the entropy of the guess at \"cold\" falls layer by layer as the model "
        "becomes sure. %2")
                        .arg(QStringLiteral("98.7 %"), tiny2Training());
    p.sentence = kTiny2HalfTyped;
    p.layer = 1;
    p.head = 3;
    p.query = 10;
    p.view = QStringLiteral("lens");
    out.push_back(p);

    p.id = QStringLiteral("tiny2-knockout");
    p.title = tr("Knock out the induction heads: the copy fails");
    p.explanation =
        tr("The second copy typed up to \"a\". The clean model gives \"wood\" p = %1 after this \"a\". Here the "
           "three heads of layer 1 with the highest induction scores (H1 %2, H3 %3, H4 %4) are switched off: their "
           "output before W_O is set to zero (crossed out; a head's right-click menu, or Edit ▸ Ablate the selected "
           "head (zero), Ctrl+K, does it). "
           "Now the edited model gives it %5 (Predictions dock, under the list): the copy is mostly gone. The "
           "crossed-out thumbnails still show the stripe one column right of the repeat: an ablation keeps where a "
           "head looks and removes what it writes, and the copy needs what it writes. Heads 5 and 7 score almost "
           "as high and copy too: ablate them as well and \"wood\" leaves the top 10. The clean-vs-edited switch "
           "compares the two models.")
            .arg(QStringLiteral("98.9 %"), QStringLiteral("0.953"), QStringLiteral("0.978"), QStringLiteral("0.949"),
                 QStringLiteral("4.85 %"));
    p.sentence = kTinyHalfTyped;
    p.layer = 1;
    p.head = 3;
    p.query = 24;
    p.view = QStringLiteral("headRoles");
    p.ablate = {{1, 1}, {1, 3}, {1, 4}};
    out.push_back(p);
    p.ablate.clear();

    p.id = QStringLiteral("tiny2-k-composition");
    p.title = tr("K-composition: the previous-token head feeds the induction head's keys");
    p.explanation = tr(
        "Path patching in the Patching tab. Clean prompt: the second copy typed up to \"a\"; \"wood\" has p = "
        "%1 (Predictions dock). Corrupted prompt: the first copy says \"in the wooden box\", so no \"wood\" "
        "follows an \"a\" and p(\"wood\") falls below 5 %. Each cell is the corrupted run in which one head of "
        "layer 0 (the sender) gets its clean output back, seen only by the KEYS of layer 1's induction head 3 "
        "(everything else frozen). The previous-token head H2 brings the copy back: H2 %2; the other heads "
        "that look back do not, through these keys: H3 %3 (lower), H5 %4. H2 writes \"the token before me "
        "was a\" into the stream at \"wood\", and head 3 finds \"wood\" by that key: K-composition (Olsson et "
        "al. 2022). Choose the receiver's queries or values and run again: no sender raises p(\"wood\") by "
        "even one percentage point. It is the key path that matters.")
                        .arg(QStringLiteral("98.9 %"), QStringLiteral("0.289"), QStringLiteral("0.018"), QStringLiteral("0.044"));
    p.sentence = kTinyHalfTyped;
    p.layer = 1;
    p.head = 3;
    p.query = 24;
    p.view = QStringLiteral("patching");
    p.patching.corrupted = QStringLiteral("My friend keeps seven green apples in the wooden box. "
                                          "My friend keeps seven green apples in a");
    p.patching.answer = QStringLiteral(" wood");
    p.patching.metric = PatchMetric::Prob;
    p.patching.sweep = PatchSweep::Path;
    p.patching.receiver = PathReceiver{1, 3, HeadInput::K};
    p.runPatching = true;
    out.push_back(p);
    p.patching = PatchingSettings();
    p.runPatching = false;
}

// The lessons on attnviz-dates (`bundled-dates`, a T5 that writes dates as ISO dates): cross-attention.
// Every number a paragraph quotes is a cell of the Cross heatmap (layer 1, the heads averaged), read back
// by tst_lessons. Both dates are held out: the model never saw them, in any format.
const QString kDatesLong = QStringLiteral("the 11th of March, 1998");
const QString kDatesShort = QStringLiteral("11th Mar 98");
const QString kDatesIso = QStringLiteral("1998-03-11");

QString datesModel()
{
    return tr("attnviz-dates, a small T5 that attnviz trained on dates typed in eight formats, never saw this "
              "date; of 3,200 such dates it writes 3,199 right (resources/models/attnviz-dates/MANIFEST.md).");
}

void addDatesLessons(std::vector<Preset> &out)
{
    Preset p;
    p.seed = kDatesSeed;
    p.model = kBundledDatesArg;
    p.display = HeadDisplay::Average;
    p.attention = AttentionKind::Cross;
    p.layer = 1;
    p.view = QStringLiteral("weights");
    p.fixedScale = true;

    p.id = QStringLiteral("dates-year");
    p.title = tr("Cross-attention: the year's digits read the year");
    p.explanation = tr(
        "Cross-attention: queries from the decoder, keys and values from the encoder. attnviz-dates reads "
        "\"the 11th of March, 1998\" and writes \"1998-03-11\", a character a step. Each row is a decoder step, "
        "labelled with the token it reads (first the start token <pad>); it writes the next. Layer 1, heads "
        "averaged: the row writing the year's \"1\" looks hardest at the \"1\" of 1998 (%1), the row writing the "
        "first \"9\" at the first \"9\" (%2, selected), the next at the second \"9\" (%3): a diagonal, like the "
        "alignments of translation models (Bahdanau et al. 2014). The row writing \"8\" gives the \"8\" %4 and "
        "the end token </s> %5. %6")
                        .arg(QStringLiteral("0.50"), QStringLiteral("0.91"), QStringLiteral("0.97"), QStringLiteral("0.50"),
                             QStringLiteral("0.49"), datesModel());
    p.sentence = kDatesLong;
    p.target = kDatesIso;
    p.query = 1;
    p.zoom = QRect(16, 0, 8, 5); // keys 16–23 (the year and </s>), queries 0–4: the year's rows, with their numbers
    out.push_back(p);

    p.id = QStringLiteral("dates-month");
    p.title = tr("Cross-attention: the month's digits read the month's name");
    p.explanation = tr(
        "The same date. No digit of the source says 3, yet the target's month is \"03\": the rows that write "
        "the month look at the word March, the row writing \"0\" gives its \"M\" %1, the row writing \"3\" "
        "(selected) %2. The model learned the month names from examples, and reads them where they stand: in "
        "\"March 11, 1998\" or in the dotted day-month-year form the same rows move to the month there. The day's rows read "
        "\"11th\": the row writing the day's second \"1\" gives the second \"1\" of the source %3. Type another date "
        "(Target empty: the model writes it) and watch the bright cells follow the fields.")
                        .arg(QStringLiteral("0.52"), QStringLiteral("0.96"), QStringLiteral("1.00"));
    p.query = 6;
    p.zoom = QRect(3, 4, 11, 6); // keys 3–13 (the day and "March"'s M), queries 4–9: the month's and the day's rows
    out.push_back(p);
    p.zoom = QRect();

    p.id = QStringLiteral("dates-century");
    p.title = tr("Cross-attention: a century that is not in the source");
    p.explanation = tr(
        "\"11th Mar 98\" has a two-digit year, which the model learned to read as 1998 (50–99: the 1900s, "
        "00–49: the 2000s). The rows that write \"1\" and \"9\" (selected) have no century to copy: both "
        "look at the \"9\" of \"98\" (%1 and %2), the digit that decides it, and the row writing the year's "
        "third digit reads the same \"9\" with %3. Attention shows where the model looked, not why: the "
        "century rule is in the weights that turn what it read into \"19\".")
                        .arg(QStringLiteral("0.75"), QStringLiteral("0.75"), QStringLiteral("0.99"));
    p.sentence = kDatesShort;
    p.query = 1;
    out.push_back(p);
}

std::vector<Preset> make()
{
    std::vector<Preset> out;
    auto add = [&out](Preset p) { out.push_back(std::move(p)); };

    Preset p;
    p.id = QStringLiteral("journey-scores");
    p.seed = QStringLiteral("001");
    p.title = tr("The journey: dot products, softmax, context vector");
    p.explanation = tr(
        "Six words, each a hand-made 3-d vector. With no projections the query, the keys and the values are the "
        "vectors themselves. The score of \"journey\" for every word is a plain dot product, 0.9544 1.4950 1.4754 "
        "0.8434 0.7070 1.0865 (no scaling here), softmax turns the row into weights that sum to 1, "
        "0.1385 0.2379 0.2333 0.1240 0.1082 0.1581, and the context vector of \"journey\" is the weighted sum of all "
        "six vectors: [0.4419, 0.6515, 0.5683]. Click any cell of the pipeline to see the arithmetic.");
    p.sentence = journeySentence();
    p.table = PresetTable::Journey;
    p.settings = plain(ScaleRule::None);
    p.query = 1;
    p.view = QStringLiteral("pipeline");
    p.stage = QStringLiteral("weights"); // its explanation lists the scores; the context row follows
    p.column = 1;
    add(p);

    p.id = QStringLiteral("journey-sum");
    p.title = tr("Sum instead of softmax");
    p.explanation = tr(
        "The same scores, normalized by dividing each by the row's sum instead of by softmax: \"journey\" gets "
        "0.1455 0.2278 0.2249 0.1285 0.1077 0.1656. The weights still sum to 1 but stay closer to uniform, since "
        "softmax exaggerates differences (exp) and this does not; it also breaks on negative or zero-sum rows, "
        "which softmax never does. Compare the row chart with the softmax preset.");
    p.settings = plain(ScaleRule::None);
    p.settings.normalization = Normalization::Sum;
    p.view = QStringLiteral("weights");
    p.stage.clear();
    p.column = -1;
    add(p);

    p.id = QStringLiteral("journey-v1");
    p.title = tr("Trainable weights: W_q, W_k, W_v drawn with torch.rand (seed 123)");
    p.explanation = tr(
        "SelfAttention_v1: three 3 × 2 matrices drawn by torch.rand after torch.manual_seed(123) project every "
        "word to a 2-d query, key and value; scores are scaled by 1/√2. attnviz draws the same numbers as PyTorch, "
        "so the context vectors match the notebook: the first row is [0.2996, 0.8053]. Change the seed to see other "
        "weights; every row stays close to the others because random projections of similar vectors are similar.");
    p.settings = trainable(InitScheme::Uniform01, 123);
    p.query = 0;
    p.view = QStringLiteral("embeddings");
    add(p);

    p.id = QStringLiteral("causal-neg-inf");
    p.title = tr("Causal mask by −∞ before softmax (nn.Linear weights, seed 789)");
    p.explanation = tr(
        "SelfAttention_v2 (nn.Linear weights after torch.manual_seed(789)) with a causal mask: each word may only "
        "look at itself and the words before it. Scores above the diagonal are set to −∞, so softmax gives them "
        "exactly 0 and renormalizes the rest: \"journey\" now splits 0.5517 / 0.4483 between \"your\" and itself, "
        "and the first word attends only to itself (1.0).");
    p.settings = trainable(InitScheme::TorchLinear, 789);
    p.settings.mask = MaskChoice::Causal;
    p.settings.maskMethod = MaskMethod::NegInf;
    p.query = 1;
    p.view = QStringLiteral("weights");
    add(p);

    p.id = QStringLiteral("causal-renormalize");
    p.title = tr("Causal mask by zeroing after softmax and renormalizing");
    p.explanation = tr(
        "The notebook's first way: softmax over all six keys, multiply by a lower-triangular mask of ones, then "
        "divide each row by its new sum. The result is the same as masking with −∞ first (\"journey\": 0.5517 / "
        "0.4483): softmax of a subset equals the renormalized softmax of the whole row. Switch \"Mask method\" "
        "between the two methods and nothing in the weights moves.");
    p.settings.maskMethod = MaskMethod::MultiplyRenormalize;
    add(p);

    p.id = QStringLiteral("dropout");
    p.title = tr("Dropout on the attention weights (p = 0.5, seed 123)");
    p.explanation = tr(
        "During training, dropout zeroes each weight with probability p and scales the survivors by 1/(1 − p). "
        "With p = 0.5 and torch.manual_seed(123) the causal weights lose the same cells as in the notebook and "
        "the kept ones double: the first row becomes 2.0, \"journey\" keeps only 0.8966 (2 × 0.4483). Rows no longer "
        "sum to 1; at inference dropout is off.");
    p.settings = trainable(InitScheme::TorchLinear, 789);
    p.settings.mask = MaskChoice::Causal;
    p.settings.dropout = 0.5;
    p.settings.dropoutSeed = 123;
    p.query = 1;
    // the weight before dropout (0.4483) is in the weights cell's explanation
    p.view = QStringLiteral("pipeline");
    p.stage = QStringLiteral("weights");
    p.column = 1;
    p.settingNumbers = QStringList{QStringLiteral("0.5")};
    add(p);

    p.id = QStringLiteral("multihead-wrapper");
    p.title = tr("Two heads as two separate modules (MultiHeadAttentionWrapper, seed 123)");
    p.explanation = tr(
        "Two complete single-head attentions, each with its own 3 × 2 W_q, W_k, W_v (drawn head after head), "
        "causal; their 2-d context vectors are concatenated into 4-d outputs with no output projection. The first "
        "row is [−0.4519, 0.2216, 0.4772, 0.1063]: the first two numbers come from head 0, the last two from head 1. "
        "Look at both heads in the All heads tab: same sentence, different patterns.");
    p.settings = trainable(InitScheme::TorchLinear, 123);
    p.settings.numHeads = 2;
    p.settings.drawOrder = DrawOrder::PerHead;
    p.settings.mask = MaskChoice::Causal;
    p.query = 0;
    // the text quotes the output's first row: the pipeline's last stage, beside the concatenation
    p.view = QStringLiteral("pipeline");
    p.stage = QStringLiteral("output");
    p.column = 0;
    p.settingNumbers.clear();
    add(p);

    p.id = QStringLiteral("multihead-split");
    p.title = tr("Two heads by splitting one projection, then W_o (MultiHeadAttention, seed 123)");
    p.explanation = tr(
        "The efficient form: one W_q, W_k, W_v each projects to d_out = 2, and the columns are split between two "
        "heads of width 1; the heads' outputs are concatenated and mixed by an output projection W_o (2 × 2, with "
        "bias). Same seed, other weights than the wrapper, because the draws come in another order: the first "
        "output row is [0.3190, 0.4858].");
    p.settings = trainable(InitScheme::TorchLinear, 123);
    p.settings.numHeads = 2;
    p.settings.dHead = 1;
    p.settings.outWidth = 2;
    p.settings.mask = MaskChoice::Causal;
    add(p);

    p = Preset();
    p.id = QStringLiteral("bloem-basic");
    p.seed = QStringLiteral("002");
    p.title = tr("Basic self-attention: softmax(X Xᵀ) X");
    p.explanation = tr(
        "Peter Bloem's simplest self-attention: no parameters at all, w_ij = softmax_j(x_i · x_j), y_i = Σ_j w_ij x_j. "
        "The three 4-d vectors are the notebook's printed torch.randn draws. Raw scores 3.8773 −2.1984 0.0498 "
        "(the notebook's end in 4, 5, 9: its draws are not rounded to the printed 4 decimals) "
        "become weights 0.9765 0.0022 0.0213 for x1: a vector is usually most similar to itself, so without "
        "projections every word mostly attends to itself — the reason for learned W_q and W_k.");
    p.sentence = bloemSentence();
    p.table = PresetTable::Bloem;
    p.settings = plain(ScaleRule::None);
    p.view = QStringLiteral("pipeline");
    p.stage = QStringLiteral("weights"); // x1's row: its scores in the explanation, its weights drawn
    p.column = 0;
    add(p);

    p = Preset();
    p.id = QStringLiteral("ship-odyssey");
    p.fixedScale = false; // "most to itself and then to crew": weights up to 0.23
    p.seed = QStringLiteral("003");
    p.title = tr("\"ship\" among sailors: softmax(X Xᵀ / √d) X");
    p.explanation = tr(
        "Word vectors instead of hand-made ones (the bundled 50-d table; the notebook uses GloVe, so the numbers "
        "differ, the picture does not). Queries, keys and values are the embeddings, scaled by 1/√50. \"ship\" "
        "attends most to itself and then to \"crew\": its contextual embedding is pulled towards the sea. Compare "
        "with the next preset, where \"ship\" means sending an order.");
    p.sentence = kOdyssey;
    p.settings = plain(ScaleRule::InvSqrtDHead);
    p.query = 6;
    p.view = QStringLiteral("weights");
    add(p);

    p.id = QStringLiteral("ship-amazon");
    p.fixedScale = false; // the pattern around "ship", as in ship-odyssey
    p.title = tr("\"ship\" in commerce: the same word, another context");
    p.explanation = tr(
        "\"We process and ship your order\": the same vector for \"ship\" meets other neighbours, gets other "
        "weights, and so another contextual embedding. This is what contextual means: the output for a word depends "
        "on the sentence around it. Use Compare → \"ship\" in two contexts to see both side by side.");
    p.sentence = kAmazon;
    p.query = 3;
    add(p);

    p.id = QStringLiteral("ship-cosine");
    p.fixedScale = true; // cosines against the diagonal's 1
    p.title = tr("Cosine similarities as weights");
    p.explanation = tr(
        "The notebook's first attempt: the weights are the cosines of the word vectors, 1 on the diagonal, not "
        "normalized (rows do not sum to 1), and the new embedding of \"ship\" is Σ_j cos(ship, w_j) · w_j. Repeated "
        "words (\"to\", \"my\") get identical rows. Softmax of scaled dot products, the next step, makes the rows "
        "probability distributions.");
    p.sentence = kOdyssey;
    p.settings = plain(ScaleRule::None);
    p.settings.normalization = Normalization::Cosine;
    p.query = 6;
    add(p);

    p = Preset();
    p.id = QStringLiteral("multihead-bloem");
    p.seed = QStringLiteral("000");
    p.title = tr("Multi-head self-attention: 5 heads of 10 dimensions, scaled by 1/√d_model");
    p.explanation = tr(
        "The multi-head modules of seeds 000 and 002: the 50-d embeddings are projected by W_q, W_k, W_v (50 × 50, "
        "nn.Linear init) and each projection is cut into 5 slices of 10, one per head; each head runs its own "
        "attention and the heads' outputs are concatenated and unified by W_o. These notebooks divide the scores by "
        "√k with k = d_model (50), not √d_head: switch the scaling to 1/√d_head to see the heads sharpen.");
    p.sentence = kOdyssey;
    p.settings = plain(ScaleRule::InvSqrtDModel);
    p.settings.numHeads = 5;
    p.settings.projection = ProjectionMode::Random;
    p.settings.projectionSeed = 0;
    p.display = HeadDisplay::All;
    p.query = 6;
    p.view = QStringLiteral("grid");
    add(p);

    p = Preset();
    p.id = QStringLiteral("cross-attention");
    p.fixedScale = false; // the shape of 3 × 5 weights up to 0.21, not their size
    p.settingNumbers = QStringList{QStringLiteral("0.2")}; // "set dropout to 0.2"
    p.seed = QStringLiteral("004");
    p.title = tr("Cross-attention: 3 queries over 5 keys, 2 heads, hidden 32, output 8");
    p.explanation = tr(
        "The shapes of seed 004's MultiheadedAttention: queries come from one sequence, keys and values from another "
        "(here two sentences), W_q, W_k, W_v project to a hidden size of 32 split into 2 heads of 16, and W_o maps "
        "the concatenation to 8 outputs. The weights are 3 × 5: one row per query word, one column per key word; "
        "the output has one row per query. The notebook's module is in training mode, so it also drops 20 % of the "
        "weights: set dropout to 0.2 to see that.");
    p.sentence = QStringLiteral("the ship sails");
    p.keySentence = QStringLiteral("we process your order today");
    p.settings = plain(ScaleRule::InvSqrtDHead);
    p.settings.numHeads = 2;
    p.settings.dHead = 16;
    p.settings.outWidth = 8;
    p.settings.projection = ProjectionMode::Random;
    p.settings.projectionSeed = 0;
    p.display = HeadDisplay::All;
    p.view = QStringLiteral("grid");
    add(p);

    addTinyLessons(out);
    addTiny2Lessons(out);
    addDatesLessons(out);
    return out;
}

} // namespace

const std::vector<Preset> &presets()
{
    static const std::vector<Preset> all = make();
    return all;
}

QStringList quotedNumbers(const Preset &p)
{
    static const QRegularExpression number(QStringLiteral("[−-]?\\d+\\.\\d+"));
    QStringList out;
    for (auto it = number.globalMatch(p.explanation); it.hasNext();) {
        const QString n = it.next().captured();
        if (!p.settingNumbers.contains(n) && !out.contains(n))
            out << n;
    }
    return out;
}

const Preset *findPreset(const QString &id)
{
    for (const Preset &p : presets())
        if (p.id == id)
            return &p;
    return nullptr;
}

QString seedTitle(const QString &seed)
{
    if (seed == QLatin1String("000"))
        return tr("seed 000: computing self-attention, multi-head (Bloem)");
    if (seed == QLatin1String("001"))
        return tr("seed 001: a simple self-attention mechanism (the journey)");
    if (seed == QLatin1String("002"))
        return tr("seed 002: self-attention and transformer blocks (Bloem)");
    if (seed == QLatin1String("003"))
        return tr("seed 003: self-attention of a sentence with word embeddings (ship)");
    if (seed == QLatin1String("004"))
        return tr("seed 004: multi-head and cross-attention");
    if (seed == kTinySeed)
        return tr("attnviz-tiny: lessons on a trained model");
    if (seed == kTiny2Seed)
        return tr("attnviz-tiny 2: lessons on modern attention");
    if (seed == kDatesSeed)
        return tr("attnviz-dates: cross-attention in a T5");
    return tr("seed %1").arg(seed);
}

} // namespace attnviz::ui
