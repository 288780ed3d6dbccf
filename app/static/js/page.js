// Behaviour every page declares in its markup, kept out of inline handlers so the
// Content-Security-Policy can forbid inline script:
//   <form data-confirm="Question?">  asks before submitting;
//   <form data-no-submit>            is never submitted (its fields are read by a script).
for (const form of document.querySelectorAll('form[data-confirm]')) {
  form.addEventListener('submit', (event) => {
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
}
for (const form of document.querySelectorAll('form[data-no-submit]')) {
  form.addEventListener('submit', (event) => event.preventDefault());
}
