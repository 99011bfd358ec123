/// The small status page at `/`: each camera with its URLs, a live HLS preview when the browser
/// plays HLS natively, and the property controls.
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
                links += "<li>\(escape(k)): <code>\(escape(v))</code></li>"
            }
            rows += """
            <section data-camera="\(id)"><h2>\(id) <small>(\(escape(cam.driver.vendor)), <span class="state"></span>)</small></h2>
            <ul>\(links)</ul>
            <video muted autoplay playsinline width="640" src="/hls/\(id)/index.m3u8"></video>
            <table class="props"></table></section>
            """
        }
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>livegate</title>
        <style>body{font-family:sans-serif;margin:2em}code{background:#eee;padding:2px 4px}td{padding:2px 8px}</style>
        </head><body><h1>livegate</h1>\(rows)
        <script>
        async function refresh(){
          for (const s of document.querySelectorAll('section[data-camera]')) {
            const id = s.dataset.camera;
            const c = await (await fetch('/api/v1/cameras/' + id)).json();
            s.querySelector('.state').textContent = c.state + ', ' + c.fps + ' fps, ' + c.frames + ' frames';
            const r = await fetch('/api/v1/cameras/' + id + '/properties');
            if (!r.ok) continue;
            const t = s.querySelector('.props'); t.innerHTML = '';
            for (const p of await r.json()) {
              const tr = document.createElement('tr');
              const sel = document.createElement('select');
              for (const ch of p.choices) { const o = document.createElement('option'); o.textContent = ch; o.selected = ch == p.value; sel.append(o); }
              sel.disabled = !p.writable;
              sel.onchange = async () => { const x = await fetch('/api/v1/cameras/' + id + '/properties/' + p.name,
                {method:'PUT', headers:{'Content-Type':'application/json'}, body: JSON.stringify({value: isNaN(+sel.value) || p.name=='shutterSpeed' || p.name=='aperture' ? sel.value : +sel.value})});
                if (!x.ok) alert((await x.json()).error); };
              const td1 = document.createElement('td'); td1.textContent = p.name;
              const td2 = document.createElement('td'); td2.append(sel);
              tr.append(td1, td2); t.append(tr);
            }
          }
        }
        refresh(); setInterval(refresh, 3000);
        </script></body></html>
        """
    }
}
