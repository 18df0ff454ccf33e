package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A flood of long prompts against {@code serve --memory-budget}, the server in a process of its
 * own so that its resident set is its own ({@link BudgetFlood}): some requests are answered 503
 * with {@code Retry-After}, the others their own text, the process lives on, and its resident set
 * stays within the budget. The bound (docs/api.md, "How the budget is counted"): the budget counts
 * the models' weights and runtime and the admitted requests' peaks; the process also holds the JVM
 * and the native libraries, measured as the baseline right after start-up, before any request (the
 * tiny default model is loaded in it, so its resident bytes come off the budget). Every sample of
 * RSS − baseline must be at most the rest of the budget.
 */
class MemoryBudgetFloodTest {
    /**
     * @param roomInRequests the budget's room beside the flooded model and both models' prefix
     *     cache caps, in requests' peaks: at 2.5 two run together; at 5 five, their prompts restored
     *     from the prefix cache and merged into one prompt batch (a merge that held one batch buffer
     *     per row took RSS to 1.22 times the room there)
     * @param requests sent at once, well over what fits
     * @param serveFlags more {@code serve} flags: {@code --prompt-cache-size 0} makes every row
     *     prefill its whole prompt, as distinct prompts do (MLX's cache limit at the budget less
     *     the models' resident bytes let its freed buffers take the admitted requests' room a
     *     second time: 1.17 times the room at 5)
     */
    @ParameterizedTest(name = "room for {0} requests, {1} sent, serve flags [{2}]")
    @CsvSource({"2.5, 12, ''", "5, 24, ''", "5, 24, --prompt-cache-size 0"})
    void aFloodOfLongPromptsIsRefused503AndTheResidentSetStaysWithinTheBudget(
            double roomInRequests, int requests, String serveFlags) throws Exception {
        BudgetFlood.Outcome o =
                BudgetFlood.run(roomInRequests, requests, serveFlags.isBlank() ? new String[0] : serveFlags.split(" "));
        System.out.printf(
                "flood: %d of %d served; RSS baseline %d, peak +%d, room %d (budget %d), %d samples%n",
                o.served(),
                o.answers().size(),
                o.baselineBytes(),
                o.growthBytes(),
                o.roomBytes(),
                o.budgetBytes(),
                o.samples());
        assertTrue(o.aliveAfter(), "the server died under the flood:\n" + o.log());
        int busy = 0;
        for (int i = 0; i < o.answers().size(); i++) {
            HttpResponse<String> r = o.answers().get(i);
            if (r.statusCode() == 200) {
                assertEquals(o.expected().get(i), BudgetFlood.text(r), "request " + i);
            } else {
                assertEquals(503, r.statusCode(), r.body());
                assertEquals("memory_busy", BudgetFlood.errorCode(r), r.body());
                assertEquals("1", r.headers().firstValue("Retry-After").orElse(null), r.body());
                busy++;
            }
        }
        assertTrue(o.served() >= 1, "none of the flood was served");
        assertTrue(busy >= 1, "the flood never exceeded a budget that fits " + roomInRequests + " requests");
        assertNotNull(o.after());
        assertEquals(
                200,
                o.after().statusCode(),
                "every reservation was returned: " + o.after().body());
        assertEquals(o.afterExpected(), BudgetFlood.text(o.after()));
        assertTrue(o.samples() >= 10, "too few RSS samples to speak for the flood: " + o.samples());
        assertTrue(
                o.growthBytes() >= o.floodedWeightsBytes() / 2,
                "the samples missed the flooded model's load: RSS grew by " + o.growthBytes()
                        + " bytes, its weights and tokenizer are " + o.floodedWeightsBytes());
        assertTrue(
                o.growthBytes() <= o.roomBytes(),
                "RSS peaked " + o.growthBytes() + " bytes over the baseline's " + o.baselineBytes()
                        + ", more than the " + o.roomBytes() + " the budget of " + o.budgetBytes()
                        + " leaves beside the default model");
    }
}
