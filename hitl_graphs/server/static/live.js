// The inbox follows the live feed: each new review or decision the session may see refreshes the
// list (htmx's "refresh" trigger on #live). EventSource reconnects by itself with Last-Event-ID,
// and the list also refreshes every minute in case a proxy holds the stream back.
document.addEventListener("DOMContentLoaded", function () {
  var live = document.getElementById("live");
  if (!live || !window.EventSource) { return; }
  var feed = new EventSource("/inbox/events");
  var refresh = function () { htmx.trigger(live, "refresh"); };
  feed.addEventListener("review", refresh);
  feed.addEventListener("decided", refresh);
});
