// A file upload that shows how far it has come: a form marked `data-upload-progress` is sent
// by XMLHttpRequest (the only browser API that reports an upload's progress), so a table of a
// few hundred megabytes says "Uploading… 45 % (75 of 168 MB)" and then "Checking and storing…"
// instead of a page that seems to hang. Without script the form posts as before.
//
// The server answers as it does for the plain form: a redirect to the new dataset's page (the
// request follows it; the browser goes there) or the project page again with the reason in
// its error box, which replaces this page's, the fields and the chosen file kept for a retry.

const MB = 1e6;

function megabytes(bytes) {
  return (bytes / MB).toFixed(bytes < 10 * MB ? 1 : 0);
}

function statusLine(form) {
  let box = form.querySelector('[data-testid=upload-status]');
  if (!box) {
    box = document.createElement('div');
    box.className = 'upload-status';
    box.innerHTML = '<progress data-testid="upload-progress" max="1" value="0"></progress>'
      + '<p class="muted small" data-testid="upload-status" aria-live="polite"></p>';
    form.append(box);
    box = box.querySelector('[data-testid=upload-status]');
  }
  return { bar: form.querySelector('[data-testid=upload-progress]'), text: box };
}

// The test id of the form's error box: `data-upload-progress="collection-error"`, else "error".
function errorId(form) {
  return form.dataset.uploadProgress || 'error';
}

function showError(form, message) {
  let alert = form.parentElement.querySelector(`:scope > [data-testid=${errorId(form)}]`);
  if (!alert) {
    alert = document.createElement('div');
    alert.className = 'alert';
    alert.setAttribute('role', 'alert');
    alert.dataset.testid = errorId(form);
    form.before(alert);
  }
  alert.textContent = message;
}

// The reason a refused upload gives: the form's error box on the page the server sent back,
// else its first alert or heading, else the HTTP status.
function refusal(form, xhr) {
  const page = new DOMParser().parseFromString(xhr.responseText || '', 'text/html');
  const found = page.querySelector(`[data-testid=${errorId(form)}]`)
    || page.querySelector('[role=alert]') || page.querySelector('h1');
  const said = found ? found.textContent.trim() : '';
  return said || `The upload was refused (HTTP ${xhr.status}); nothing was stored.`;
}

function send(form, button) {
  const { bar, text } = statusLine(form);
  const xhr = new XMLHttpRequest();
  const done = () => {
    button.disabled = false;
    bar.hidden = true;
  };
  xhr.upload.addEventListener('progress', (event) => {
    if (!event.lengthComputable) return;
    bar.hidden = false;
    bar.value = event.loaded / event.total;
    text.textContent = `Uploading… ${Math.floor(100 * bar.value)} % `
      + `(${megabytes(event.loaded)} of ${megabytes(event.total)} MB)`;
  });
  xhr.upload.addEventListener('load', () => {
    bar.removeAttribute('value'); // indeterminate: the server reads, checks and stores it
    text.textContent = 'Uploaded; checking and storing it…';
  });
  xhr.addEventListener('load', () => {
    const landed = new URL(xhr.responseURL || form.action, location.href);
    if (xhr.status < 400 && landed.pathname !== new URL(form.action, location.href).pathname) {
      text.textContent = 'Stored; opening it…';
      location.assign(landed.href);
      return;
    }
    done();
    text.textContent = '';
    showError(form, refusal(form, xhr));
  });
  xhr.addEventListener('error', () => {
    done();
    text.textContent = '';
    // The bytes may all have arrived before the connection went: only the server knows.
    showError(form, 'The connection failed before the server answered: reload the page to see '
      + 'whether the upload was stored.');
  });
  xhr.open('POST', form.action);
  xhr.send(new FormData(form));
  button.disabled = true;
  bar.hidden = false;
  bar.value = 0;
  text.textContent = 'Uploading…';
}

for (const form of document.querySelectorAll('form[data-upload-progress]')) {
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    send(form, form.querySelector('button[type=submit]'));
  });
}
