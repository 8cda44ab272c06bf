// The memory page's one script (progressive enhancement: every form works without it):
// a form marked data-confirm asks before it is sent.
document.addEventListener("submit", (event) => {
  const question = event.target.getAttribute("data-confirm");
  if (question && !window.confirm(question)) event.preventDefault();
});
