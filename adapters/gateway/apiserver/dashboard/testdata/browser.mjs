// Drives the dashboard in Debian's Chromium with playwright-core (pinned
// in .ci/node): the journey of browser_test.go. Reads its inputs from the
// environment, writes screenshots to SHOTS, prints one JSON line of what
// it measured, and exits non-zero on the first failed check.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.HERMES_NODE_MODULES, "x.js"));
const { chromium } = require("playwright-core");

const base = process.env.DASH_URL; // http://127.0.0.1:PORT
const key = process.env.DASH_KEY;
const session = process.env.DASH_SESSION; // the turn with three parallel tools
const big = process.env.DASH_BIG; // the session of 5,000 events
const shots = process.env.SHOTS;
const out = { screenshots: [] };

function check(ok, what) {
  if (!ok) throw new Error("check failed: " + what);
}
async function shot(page, name) {
  const file = path.join(shots, name + ".png");
  await page.screenshot({ path: file, fullPage: false });
  out.screenshots.push(file);
}

const browser = await chromium.launch({
  executablePath: process.env.HERMES_CHROMIUM,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
try {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  ctx.setDefaultTimeout(60000); // a loaded CI machine (race-built server, parallel packages) can take long
  const errors = [];
  // Nothing may be fetched from outside the server.
  ctx.on("request", (r) => { if (!r.url().startsWith(base)) errors.push("external request " + r.url()); });
  const page = await ctx.newPage();
  page.on("pageerror", (e) => errors.push("page error " + e.message));

  // Log in with the form.
  await page.goto(base + "/dashboard/");
  check(page.url().endsWith("/dashboard/login"), "redirected to the login form, at " + page.url());
  await page.fill("#key", key);
  await page.click("button[type=submit]");
  await page.waitForSelector("table.sessions");

  // Keyboard: the first Tab lands on the skip link.
  await page.keyboard.press("Tab");
  check(await page.evaluate(() => document.activeElement.classList.contains("skip")), "first Tab focuses the skip link");

  // The list, then open the session.
  await page.waitForSelector(`tr[data-session="${session}"]`);
  await shot(page, "sessions");
  await page.click(`tr[data-session="${session}"] a`);
  await page.waitForSelector("svg.tl");

  // The timeline of the scripted turn: two model calls, three tool calls
  // in three parallel lanes.
  const lanes = await page.$$eval("rect.bar-tool", (rs) => rs.map((r) => r.getAttribute("data-lane")));
  check(lanes.length === 3 && new Set(lanes).size === 3, "three tool bars in three lanes, got " + JSON.stringify(lanes));
  const models = await page.$$eval("rect.bar-model", (rs) => rs.length);
  check(models === 2, "two model-call bars, got " + models);
  const widths = await page.$$eval("rect.bar", (rs) => rs.map((r) => r.getBoundingClientRect().width));
  check(widths.every((w) => w > 0), "every bar is drawn");
  // The hostile message is text: its script never ran.
  check(await page.evaluate(() => window.__xss === undefined), "a message's <script> did not run");
  check((await page.textContent(".msg-user")).includes("<script>window.__xss=1</script>"), "the hostile message shows as text");
  check((await page.$$("pre.chroma")).length > 0, "code is highlighted");
  // One time axis over the turns, drawn as wide as each turn's timeline
  // (one scale on screen), its ticks labelled from 0.
  const axis = await page.$eval("svg.axis", (a) => ({ w: a.getBoundingClientRect().width,
    ticks: [...a.querySelectorAll("g.tick text")].map((t) => t.textContent) }));
  const turnW = await page.$eval("figure.turn svg.tl", (s) => s.getBoundingClientRect().width);
  check(axis.ticks.length >= 3 && axis.ticks[0] === "0", "the time axis has ticks from 0, got " + JSON.stringify(axis.ticks));
  check(Math.abs(axis.w - turnW) < 1, `the axis is as wide as a turn's timeline (${axis.w} vs ${turnW})`);
  check((await page.$$("figure.turn path.grid")).length >= 1, "the axis' grid crosses the turn");
  await shot(page, "session");

  // A second tab on the list, following live.
  const list = await ctx.newPage();
  list.on("pageerror", (e) => errors.push("list page error " + e.message));
  await list.goto(base + "/dashboard/");
  await list.waitForSelector("body[data-live-ready]");
  await list.evaluate(() => { window.__notReloaded = true; });
  const rowsBefore = await list.$$eval("tr[data-session]", (rs) => rs.length);

  // Fork at the second tool bar: clicking it sets the fork point.
  const bar = page.locator("a.bar-link:has(rect.bar-tool)").nth(1);
  const rev = await bar.getAttribute("data-rev");
  await bar.click();
  check((await page.inputValue("#fork-at")) === rev, "clicking a bar sets the fork point to " + rev);
  await Promise.all([page.waitForURL(/notice=forked/), page.click("form.fork button")]);
  const forked = decodeURIComponent(new URL(page.url()).pathname.split("/").pop());
  out.forked = forked;
  out.forkAt = Number(rev);

  // The new session appears in the other tab without a reload.
  await list.waitForSelector(`tr[data-session="${forked}"]`);
  check(await list.evaluate(() => window.__notReloaded === true), "the list was not reloaded");
  const rowsAfter = await list.$$eval("tr[data-session]", (rs) => rs.length);
  check(rowsAfter === rowsBefore + 1, `one more row live (${rowsBefore} -> ${rowsAfter})`);
  await shot(list, "sessions-live");

  // Lineage of the fork.
  await page.goto(base + "/dashboard/lineage/" + forked);
  await page.waitForSelector("a.node.current");
  check((await page.$$("ul.tree a.node")).length >= 2, "the tree holds the parent and the fork");
  await shot(page, "lineage");

  // Search, then a facet click.
  await page.goto(base + "/dashboard/search?q=stations");
  await page.waitForSelector("a.facet");
  const total = await page.textContent("#total");
  await Promise.all([page.waitForURL(/role%3Auser/), page.click('a.facet[data-field="role"]:has-text("role: user")')]);
  await page.waitForSelector('a.facet[aria-pressed="true"]');
  const after = await page.textContent("#total");
  check(parseInt(after, 10) > 0 && parseInt(after, 10) < parseInt(total, 10), `the facet narrows the results (${total} -> ${after})`);
  check(await page.$$eval("p.hit .tag:first-child", (ts) => ts.every((t) => t.textContent === "user")), "only user messages after the facet");
  check((await page.$$("p.hit mark")).length > 0, "snippets are highlighted");
  await shot(page, "search");

  // Costs: the charts are drawn.
  await page.goto(base + "/dashboard/costs");
  await page.waitForSelector("rect.cbar");
  const bars = await page.$$eval("rect.cbar", (rs) => rs.filter((r) => r.getBoundingClientRect().width > 0).length);
  check(bars >= 4, "cost bars drawn, got " + bars);
  check(await page.$("meter#cap-day") !== null, "the daily cap's meter");
  await shot(page, "costs");

  // New chat: the button on the list, the form, the new session's page,
  // where the answer arrives live.
  await page.goto(base + "/dashboard/");
  await Promise.all([page.waitForURL(/\/dashboard\/new$/), page.click("#new-chat")]);
  await page.fill("#chat-text", "Start a new chat from the browser");
  await Promise.all([page.waitForURL(/\/dashboard\/s\/[^/?]+\?notice=sent/), page.click("form.chat button[type=submit]")]);
  out.newChat = decodeURIComponent(new URL(page.url()).pathname.split("/").pop());
  check(out.newChat !== session && out.newChat !== forked, "the new chat is a new session");
  await page.waitForSelector("body[data-live-ready]");
  await page.waitForSelector('#live-main .msg-assistant:has-text("A new chat, answered.")');
  await shot(page, "new-chat");

  // Phone width: nothing wider than the screen but the table's own scroller.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, storageState: await ctx.storageState() });
  const pp = await phone.newPage();
  await pp.goto(base + "/dashboard/s/" + session);
  await pp.waitForSelector("svg.tl");
  const overflow = await pp.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  if (overflow > 1) {
    const wide = await pp.evaluate(() => [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
      .slice(0, 5).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)));
    await shot(pp, "session-phone");
    throw new Error("wider than the phone: " + wide.join(", "));
  }
  check(overflow <= 1, "no sideways scrolling at phone width, overflow " + overflow);
  await shot(pp, "session-phone");
  await phone.close();

  // The session of 5,000 events: load time and payload.
  await page.goto(base + "/dashboard/s/" + big, { waitUntil: "load" });
  const nav = await page.evaluate(() => {
    const n = performance.getEntriesByType("navigation")[0];
    return { ttfb: n.responseStart - n.startTime, response: n.responseEnd - n.startTime, dom: n.domContentLoadedEventEnd - n.startTime,
      load: n.loadEventEnd - n.startTime, bytes: n.encodedBodySize, decoded: n.decodedBodySize };
  });
  out.big = nav;
  out.bigBars = await page.$$eval("rect.bar", (rs) => rs.length);
  await shot(page, "session-5000");

  check(errors.length === 0, "no page errors or outside requests: " + errors.join("; "));
  console.log(JSON.stringify(out));
} finally {
  await browser.close();
}
