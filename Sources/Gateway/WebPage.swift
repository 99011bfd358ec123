/// The page at `/`: every camera with its state (and why it is away), a live preview — WebRTC
/// (WHEP) first, MJPEG when WebRTC does not come up, HLS last — where a click asks the camera to
/// focus at that point, the property controls (built once from the camera's allowed values and then
/// updated in place, never under the user's pointer), a shutter button with the pictures saved (also
/// those shot on the camera) and the URLs to paste into OBS/ffmpeg/mpv with a copy button. No build step, no CDN: everything is in this page.
enum WebPage {
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }

    static func html(model: any ControlModel) -> String {
        var rows = ""
        for cam in model.cameras {
            let id = escape(cam.id)
            var links = ""
            for (k, v) in model.urls(for: cam).sorted(by: { $0.key < $1.key }) {
                links += "<li>\(escape(k)): <code>\(escape(v))</code> <button class=\"copy\" data-text=\"\(escape(v))\" aria-label=\"copy \(escape(k)) URL\">copy</button></li>"
            }
            rows += """
            <section data-camera="\(id)"><h2>\(id) <small>(\(escape(cam.driver.vendor)), <span class="state">…</span>)</small></h2>
            <div class="player"><video muted autoplay playsinline tabindex="0" aria-label="live picture of \(id); click to focus there"></video>
            <img hidden alt="live picture of \(id) (MJPEG); click to focus there" tabindex="0"><canvas class="af" hidden aria-hidden="true"></canvas></div>
            <p class="mode"></p><p><label><input type="checkbox" class="aftoggle"> show the camera's AF areas</label></p>
            <p class="shutter" hidden><button class="shoot">Take picture</button> <span class="shot" role="status"></span></p>
            <ul class="pictures" aria-label="pictures saved from \(id)"></ul>
            <table class="props"></table>
            <details><summary>URLs</summary><ul>\(links)</ul></details></section>
            """
        }
        return """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>livegate</title><link rel="icon" href="data:,">
        <style>body{font-family:sans-serif;margin:1em;max-width:60em}code{background:#eee;padding:2px 4px;word-break:break-all}
        td{padding:2px 8px}.player{position:relative;max-width:768px}.player video,.player img{width:100%;background:#000;cursor:crosshair;display:block}
        .player canvas.af{position:absolute;left:0;top:0;pointer-events:none}[hidden]{display:none!important}
        .mode{color:#666;font-size:90%;margin:0}</style>
        </head><body><h1>livegate</h1>\(rows)
        <script>
        // Live preview: WHEP first; MJPEG when WebRTC gives no frame within 4 s; HLS when neither.
        async function startWHEP(video, id) {
          const pc = new RTCPeerConnection({iceServers: []});
          pc.addTransceiver('video', {direction: 'recvonly'});
          pc.ontrack = e => { video.srcObject = e.streams[0] || new MediaStream([e.track]); };
          await pc.setLocalDescription(await pc.createOffer());
          await new Promise(done => {
            if (pc.iceGatheringState === 'complete') return done();
            pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === 'complete') done(); };
            setTimeout(done, 2000);
          });
          const r = await fetch('/whep/' + id, {method: 'POST', headers: {'Content-Type': 'application/sdp'}, body: pc.localDescription.sdp});
          if (r.status !== 201) { pc.close(); throw new Error('WHEP ' + r.status); }
          const session = r.headers.get('Location');
          await pc.setRemoteDescription({type: 'answer', sdp: await r.text()});
          window.addEventListener('pagehide', () => { fetch(session, {method: 'DELETE', keepalive: true}); pc.close(); });
          return pc;
        }
        function playing(video, ms) {
          return new Promise(ok => {
            const t = setTimeout(() => ok(false), ms);
            const check = () => { if (video.videoWidth > 0) { clearTimeout(t); ok(true); } else requestAnimationFrame(check); };
            check();
          });
        }
        async function preview(s) {
          const id = s.dataset.camera, video = s.querySelector('video'), img = s.querySelector('img'), mode = s.querySelector('.mode');
          const forced = new URLSearchParams(location.search).get('preview');
          if (forced !== 'mjpeg' && forced !== 'hls' && window.RTCPeerConnection) {
            try {
              await startWHEP(video, id);
              if (await playing(video, 4000)) { mode.textContent = 'WebRTC'; s.dataset.preview = 'webrtc'; return; }
            } catch (e) { console.log('WebRTC preview failed:', e); }
          }
          if (forced !== 'hls') {
            video.hidden = true; img.hidden = false; img.src = '/mjpeg/' + id;
            mode.textContent = 'MJPEG'; s.dataset.preview = 'mjpeg'; return;
          }
          video.srcObject = null; video.src = '/hls/' + id + '/index.m3u8'; mode.textContent = 'HLS'; s.dataset.preview = 'hls';
        }
        // The WebRTC/HLS picture is turned upright when the camera is held otherwise (rotation,
        // clockwise degrees); MJPEG and the AF areas are in the camera's own pixels.
        function turned(s) { return s.dataset.preview !== 'mjpeg' ? (+s.dataset.rotation || 0) : 0; }
        function turnBox(a, r, W, H) {
          if (r === 90) return {x: H - a.y - a.h, y: a.x, w: a.h, h: a.w};
          if (r === 180) return {x: W - a.x - a.w, y: H - a.y - a.h, w: a.w, h: a.h};
          if (r === 270) return {x: a.y, y: W - a.x - a.w, w: a.h, h: a.w};
          return a;
        }
        // Click = touch-AF at that point, in the camera picture's own pixels.
        async function focusAt(s, e) {
          const el = e.currentTarget, id = s.dataset.camera;
          const w = el.videoWidth || el.naturalWidth, h = el.videoHeight || el.naturalHeight;
          if (!w || !h) return;
          const box = el.getBoundingClientRect();
          let x = Math.round((e.clientX - box.left) / box.width * w), y = Math.round((e.clientY - box.top) / box.height * h);
          const turn = turned(s);
          if (turn === 90) [x, y] = [y, w - x]; else if (turn === 180) [x, y] = [w - x, h - y]; else if (turn === 270) [x, y] = [h - y, x];
          const r = await fetch('/api/v1/cameras/' + id + '/focus', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({x, y})});
          s.querySelector('.mode').textContent = (s.dataset.preview || '') + (r.ok ? ' · focus at ' + x + ',' + y : ' · focus refused');
        }
        // AF overlay, drawn in the browser from the `af` events (the picture stays the camera's, no
        // second encoder): boxes scaled from the camera frame's pixels to the picture on screen.
        const afColours = {focused: '#0f0', locked: '#0f0', focusing: '#ff0', notFocused: '#f00'};
        function drawAF(s) {
          const c = s.querySelector('canvas.af'), on = s.querySelector('.aftoggle').checked, d = s.afEvent;
          c.hidden = !on;
          if (!on) return;
          const el = s.dataset.preview === 'mjpeg' ? s.querySelector('img') : s.querySelector('video');
          const box = el.getBoundingClientRect();
          c.width = Math.round(box.width); c.height = Math.round(box.height);
          const g = c.getContext('2d');
          g.clearRect(0, 0, c.width, c.height);
          c.dataset.boxes = '0';
          if (!d || !d.width || !d.height) return;
          const r = turned(s), side = r === 90 || r === 270;
          const sx = c.width / (side ? d.height : d.width), sy = c.height / (side ? d.width : d.height);
          g.lineWidth = 2;
          for (const area of d.areas) {
            const a = turnBox(area, r, d.width, d.height);
            g.strokeStyle = afColours[area.state] || (area.kind === 'face' || area.kind === 'eye' ? '#0ff' : '#fff');
            g.strokeRect(a.x * sx + 1, a.y * sy + 1, Math.max(1, a.w * sx - 2), Math.max(1, a.h * sy - 2));
          }
          c.dataset.boxes = String(d.areas.length);
          c.dataset.scale = sx.toFixed(4) + ',' + sy.toFixed(4);
        }
        // Shutter (shown when the camera's vendor has one). Saved pictures are listed from the event
        // stream, so shots taken on the camera body appear too.
        function addPicture(s, f) {
          const li = document.createElement('li');
          li.textContent = f.name + ' — ' + f.bytes + ' bytes' + (f.fromBody ? ' (shot on the camera)' : '');
          s.querySelector('.pictures').prepend(li);
        }
        async function shoot(s, b) {
          const st = s.querySelector('.shot');
          b.disabled = true; st.textContent = 'taking a picture…';
          try {
            const r = await fetch('/api/v1/cameras/' + s.dataset.camera + '/capture', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'});
            const j = await r.json();
            st.textContent = r.ok ? 'saved ' + j.files.map(f => f.name).join(', ') : 'refused: ' + j.error;
          } catch (e) { st.textContent = 'failed: ' + e; }
          b.disabled = false;
        }
        // Properties: rows built once per property, values updated in place (not while focused).
        async function refresh(s) {
          const id = s.dataset.camera;
          try {
            const c = await (await fetch('/api/v1/cameras/' + id)).json();
            s.querySelector('.state').textContent = c.state + (c.reason ? ' — ' + c.reason : '') + ', ' + c.fps + ' fps';
            s.querySelector('.shutter').hidden = !(c.capabilities && c.capabilities.shutter);
            s.dataset.rotation = c.rotation || 0;
            const r = await fetch('/api/v1/cameras/' + id + '/properties');
            if (!r.ok) return;
            const t = s.querySelector('.props');
            for (const p of await r.json()) {
              let sel = t.querySelector('select[data-name="' + p.name + '"]');
              if (!sel) {
                const tr = document.createElement('tr'), td1 = document.createElement('td'), td2 = document.createElement('td');
                sel = document.createElement('select'); sel.dataset.name = p.name; sel.setAttribute('aria-label', p.name);
                const lab = document.createElement('label'); lab.textContent = p.name; td1.append(lab);
                sel.onchange = async () => {
                  const v = sel.value, numeric = !isNaN(+v) && p.name !== 'shutterSpeed' && p.name !== 'aperture';
                  const x = await fetch('/api/v1/cameras/' + id + '/properties/' + p.name,
                    {method: 'PUT', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({value: numeric ? +v : v})});
                  if (!x.ok) alert((await x.json()).error);
                };
                td2.append(sel); tr.append(td1, td2); t.append(tr);
              }
              if (document.activeElement === sel) continue;
              const choices = p.choices.includes(p.value) || p.value == null ? p.choices : [p.value].concat(p.choices);
              if (sel.options.length !== choices.length || [...sel.options].some((o, i) => o.value !== String(choices[i]))) {
                sel.replaceChildren(...choices.map(ch => { const o = document.createElement('option'); o.value = o.textContent = ch; return o; }));
              }
              if (p.value != null) sel.value = String(p.value);
              sel.disabled = !p.writable;
            }
          } catch (e) { s.querySelector('.state').textContent = 'gateway unreachable'; }
        }
        for (const s of document.querySelectorAll('section[data-camera]')) {
          preview(s);
          for (const el of s.querySelectorAll('.player video, .player img')) el.addEventListener('click', e => focusAt(s, e));
          refresh(s); setInterval(() => refresh(s), 2000);
          s.querySelector('.shoot').onclick = e => shoot(s, e.target);
          s.querySelector('.aftoggle').onchange = () => drawAF(s);
          window.addEventListener('resize', () => drawAF(s));
          fetch('/api/v1/cameras/' + s.dataset.camera + '/captures').then(r => r.json()).then(j => j.files.forEach(f => addPicture(s, f))).catch(() => {});
        }
        // Live updates: one event stream for every camera (state with reason, property values).
        if (window.EventSource) {
          const es = new EventSource('/api/v1/events');
          es.addEventListener('state', e => {
            const d = JSON.parse(e.data), s = document.querySelector('section[data-camera="' + d.camera + '"]');
            if (s) s.querySelector('.state').textContent = d.state + (d.reason ? ' — ' + d.reason : '');
          });
          es.addEventListener('af', e => {
            const d = JSON.parse(e.data), s = document.querySelector('section[data-camera="' + d.camera + '"]');
            if (s) { s.afEvent = d; s.dataset.rotation = d.rotation || 0; drawAF(s); }
          });
          es.addEventListener('capture', e => {
            const d = JSON.parse(e.data), s = document.querySelector('section[data-camera="' + d.camera + '"]');
            if (s) addPicture(s, d);
          });
          es.addEventListener('capture-failed', e => {
            const d = JSON.parse(e.data), s = document.querySelector('section[data-camera="' + d.camera + '"]');
            if (s) s.querySelector('.shot').textContent = 'LOST ' + d.name + ': ' + d.reason;
          });
          es.addEventListener('property', e => {
            const d = JSON.parse(e.data), s = document.querySelector('section[data-camera="' + d.camera + '"]');
            const sel = s && s.querySelector('select[data-name="' + d.name + '"]');
            if (sel && document.activeElement !== sel && d.value != null && [...sel.options].some(o => o.value === String(d.value))) sel.value = String(d.value);
          });
        }
        for (const b of document.querySelectorAll('button.copy')) b.onclick = () => navigator.clipboard.writeText(b.dataset.text).then(() => { b.textContent = 'copied'; setTimeout(() => b.textContent = 'copy', 1500); });
        </script></body></html>
        """
    }
}
