"""Drives the 3-D slice scroller of a `slicelab compare --report` page in headless Chromium.

Usage: drive_scroller.py CHROMIUM REPORT.html OUT_FOLDER LAYER_NAME

Talks Chromium's DevTools protocol over --remote-debugging-pipe (file descriptors 3 and 4, messages are JSON
ended by a NUL byte), so it needs no driver binary and no WebSocket client. It moves the first scroller's slice
slider with the mouse and the arrow keys, switches its overlay to LAYER_NAME with a click and back with key 1,
and sets the opacity to 0 and 100, taking a screenshot of the viewport after each step; the checks compare the
canvas region of those screenshots (Pillow decodes them). Each screenshot is kept in OUT_FOLDER. Prints one JSON
object: the versions, the checks that passed and their figures; exits 1 naming the first check that failed.
"""
import base64
import fcntl
import io
import json
import os
import select
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image

TIMEOUT_SECONDS = 30


class Browser:
    """A headless Chromium with one page, spoken to over the DevTools pipe."""

    def __init__(self, executable, profile):
        to_read, self.to_write = os.pipe()
        self.from_read, from_write = os.pipe()

        def wire():  # in the child: the pipe ends become descriptors 3 (commands in) and 4 (replies out)
            commands = fcntl.fcntl(to_read, fcntl.F_DUPFD, 10)
            replies = fcntl.fcntl(from_write, fcntl.F_DUPFD, 10)
            os.dup2(commands, 3)
            os.dup2(replies, 4)

        self.process = subprocess.Popen(
            [executable, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--mute-audio',
             '--no-first-run', '--no-default-browser-check', '--remote-debugging-pipe',
             '--user-data-dir=' + profile, 'about:blank'],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=wire)
        os.close(to_read)
        os.close(from_write)
        self.buffer = b''
        self.next_id = 0
        self.events = []
        self.session = None

    def close(self):
        try:
            self.send('Browser.close', session=False, wait=False)
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.to_write)
        os.close(self.from_read)

    def _read_message(self, deadline):
        while b'\0' not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.from_read], [], [], remaining)[0]:
                raise TimeoutError('Chromium did not answer within %d s' % TIMEOUT_SECONDS)
            chunk = os.read(self.from_read, 1 << 20)
            if not chunk:
                raise RuntimeError('Chromium closed the DevTools pipe (exit status %s)' % self.process.poll())
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b'\0', 1)
        return json.loads(message)

    def send(self, method, params=None, session=True, wait=True):
        self.next_id += 1
        message = {'id': self.next_id, 'method': method, 'params': params or {}}
        if session and self.session:
            message['sessionId'] = self.session
        os.write(self.to_write, json.dumps(message).encode() + b'\0')
        if not wait:
            return None
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while True:
            reply = self._read_message(deadline)
            if reply.get('id') == self.next_id:
                if 'error' in reply:
                    raise RuntimeError('%s: %s' % (method, reply['error']))
                return reply.get('result', {})
            self.events.append(reply)

    def wait_event(self, name):
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while True:
            for index, event in enumerate(self.events):
                if event.get('method') == name:
                    return self.events.pop(index)
            self.events.append(self._read_message(deadline))

    def open(self, url, width, height):
        target = self.send('Target.createTarget', {'url': 'about:blank'})['targetId']
        self.session = self.send('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
        self.send('Page.enable')
        self.send('Emulation.setDeviceMetricsOverride',
                  {'width': width, 'height': height, 'deviceScaleFactor': 1, 'mobile': False})
        self.send('Page.navigate', {'url': url})
        self.wait_event('Page.loadEventFired')

    def evaluate(self, expression):
        result = self.send('Runtime.evaluate', {'expression': expression, 'returnByValue': True})
        if 'exceptionDetails' in result:
            raise RuntimeError('page script failed: %s' % result['exceptionDetails'])
        return result['result'].get('value')

    def click(self, x, y):
        for kind in ('mousePressed', 'mouseReleased'):
            self.send('Input.dispatchMouseEvent',
                      {'type': kind, 'x': x, 'y': y, 'button': 'left', 'buttons': 1, 'clickCount': 1})

    def key(self, key, code, key_code, text=None):
        down = {'type': 'keyDown', 'key': key, 'code': code, 'windowsVirtualKeyCode': key_code}
        if text:
            down['text'] = text
        self.send('Input.dispatchKeyEvent', down)
        self.send('Input.dispatchKeyEvent', {'type': 'keyUp', 'key': key, 'code': code,
                                             'windowsVirtualKeyCode': key_code})

    def screenshot(self):
        data = self.send('Page.captureScreenshot', {'format': 'png'})['data']
        return base64.b64decode(data)


LAYOUT = """(() => {
  const root = document.querySelector('.scroller');
  if (!root) return {ready: 0};
  root.scrollIntoView({block: 'start'});
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
  return {
    ready: +(document.body.dataset.scrollersReady || 0),
    canvas: box(root.querySelector('canvas')),
    slice: box(root.querySelector('input.slice')),
    opacity: box(root.querySelector('input.opacity')),
    layers: Array.from(root.querySelectorAll('input.layer')).map(r => ({
      box: box(r), caption: r.parentElement.textContent.trim()})),
  };
})()"""

STATE = """(() => {
  const root = document.querySelector('.scroller');
  return {slice: +root.dataset.shownSlice, layer: +root.dataset.shownLayer,
          value: +root.querySelector('input.slice').value,
          opacity: +root.querySelector('input.opacity').value,
          readout: root.querySelector('output.slice-readout').value,
          focus: document.activeElement ? document.activeElement.tagName : ''};
})()"""


def main():
    chromium, page, out_folder, layer_name = sys.argv[1:5]
    checks = {}
    failures = []

    def check(name, passed, **figures):
        checks[name] = dict(figures, passed=bool(passed))
        if not passed:
            failures.append(name)

    with tempfile.TemporaryDirectory(prefix='slicelab-chromium-') as profile:
        browser = Browser(chromium, profile)
        try:
            version = browser.send('Browser.getVersion', session=False)['product']
            browser.open('file://' + os.path.abspath(page), 1200, 900)
            layout = browser.evaluate(LAYOUT)
            if layout['ready'] < 1:
                raise RuntimeError('the page set up no scroller (data-scrollers-ready=%s)' % layout['ready'])
            left, top, width, height = layout['canvas']

            shots = {}

            def shoot(name):
                png = browser.screenshot()
                with open(os.path.join(out_folder, name + '.png'), 'wb') as file:
                    file.write(png)
                viewport = np.asarray(Image.open(io.BytesIO(png)).convert('RGB')).astype(np.int16)
                # The canvas region, one pixel in from its edges (the active outline is drawn outside).
                region = viewport[int(top) + 1:int(top + height) - 1, int(left) + 1:int(left + width) - 1]
                shots[name] = region
                return region, browser.evaluate(STATE)

            def changed(a, b):  # the fraction of canvas pixels that differ
                return float(np.mean(np.any(shots[a] != shots[b], axis=2)))

            def tinted(name):  # pixels whose channels differ: the gray image is neutral, overlays are not
                region = shots[name]
                return int(np.sum(region.max(axis=2) - region.min(axis=2) > 24))

            def chroma(name):  # the mean spread of the channels: how strongly the overlay tints
                region = shots[name]
                return float(np.mean(region.max(axis=2) - region.min(axis=2)))

            _, start = shoot('start')
            check('canvas drawn', shots['start'].size > 0 and shots['start'].max() > 0,
                  canvas=[left, top, width, height])

            # Move the slice slider with the mouse: a click at 30 % of its track (a slice with labels here).
            x, y, w, h = layout['slice']
            browser.click(x + 0.3 * w, y + h / 2)
            _, moved = shoot('slider')
            check('slider moves to another slice',
                  moved['slice'] != start['slice'] and moved['value'] < start['value'],
                  before=start['slice'], after=moved['slice'], readout=moved['readout'])
            check('slider changes the picture', changed('start', 'slider') > 0.02,
                  changed=changed('start', 'slider'))

            # The arrow key on the focused slider: one slice on.
            browser.key('ArrowRight', 'ArrowRight', 39)
            _, right = shoot('arrow_right')
            check('ArrowRight shows the next slice', right['value'] == moved['value'] + 1,
                  before=moved['value'], after=right['value'])
            check('ArrowRight changes the picture', changed('slider', 'arrow_right') > 0.02,
                  changed=changed('slider', 'arrow_right'))

            # The page's own key handler: click the canvas (the scroller takes focus), ArrowLeft goes back.
            browser.click(left + width / 2, top + height / 2)
            browser.key('ArrowLeft', 'ArrowLeft', 37)
            _, back = shoot('arrow_left')
            check('ArrowLeft on the scroller goes back',
                  back['value'] == moved['value'] and back['focus'] == 'DIV',
                  value=back['value'], focus=back['focus'])
            check('the same slice draws the same picture', changed('slider', 'arrow_left') == 0,
                  changed=changed('slider', 'arrow_left'))

            # The method switch: click the radio of LAYER_NAME; key 1 returns to the reference.
            names = [entry['caption'].split(' (')[0] for entry in layout['layers']]
            check('the switch lists the reference first and the layer', names[:1] == ['reference']
                  and layer_name in names, layers=names)
            target = names.index(layer_name)
            x, y, w, h = layout['layers'][target]['box']
            browser.click(x + w / 2, y + h / 2)
            _, switched = shoot('method')
            check('the method switch selects the run',
                  switched['layer'] == target and switched['value'] == back['value'],
                  layer=switched['layer'])
            check('the method switch changes the overlay', changed('arrow_left', 'method') > 0.005,
                  changed=changed('arrow_left', 'method'), tinted_reference=tinted('arrow_left'),
                  tinted_run=tinted('method'))
            browser.click(left + width / 2, top + height / 2)
            browser.key('1', 'Digit1', 49, text='1')
            _, reset = shoot('key_1')
            check('key 1 shows the reference again', reset['layer'] == 0 and changed('arrow_left', 'key_1') == 0,
                  layer=reset['layer'], changed=changed('arrow_left', 'key_1'))

            # Opacity: Home (0) hides the overlay, End (100) shows it more strongly than the default 50.
            x, y, w, h = layout['opacity']
            browser.click(x + w / 2, y + h / 2)
            browser.key('Home', 'Home', 36)
            _, clear = shoot('opacity_0')
            browser.key('End', 'End', 35)
            _, full = shoot('opacity_100')
            check('opacity 0 shows the gray image only', clear['opacity'] == 0 and tinted('opacity_0') == 0,
                  opacity=clear['opacity'], tinted=tinted('opacity_0'))
            check('opacity 100 tints more than 50', full['opacity'] == 100
                  and tinted('opacity_100') >= tinted('key_1') > 0 and chroma('opacity_100') > chroma('key_1'),
                  tinted_50=tinted('key_1'), tinted_100=tinted('opacity_100'), chroma_50=chroma('key_1'),
                  chroma_100=chroma('opacity_100'))
        finally:
            browser.close()

    print(json.dumps({'chromium': version, 'numpy': np.__version__, 'pillow': Image.__version__,
                      'checks': checks}, indent=1))
    if failures:
        print('failed: ' + ', '.join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == '__main__':
    main()
