#!/usr/bin/env python3
"""livegate's page in a real browser: Debian's Chromium driven headless by Playwright.

Usage: page_test.py BASE_URL SCREENSHOT_DIR [HANDSHAKE_DIR]
Opens BASE_URL/, waits for the live preview, and prints one JSON line with what it saw:
  preview ("webrtc"/"mjpeg"/"hls"), frames decoded in 1 s, the picture size, the text after a
  click at (25 %, 50 %) of the picture, the white balance shown after choosing "tungsten", the
  picture listed after pressing the shutter button with the keyboard, and the
  MJPEG fallback's picture size (BASE_URL/?preview=mjpeg) and its AF overlay toggle. Screenshots go to SCREENSHOT_DIR.
With HANDSHAKE_DIR it then writes HANDSHAKE_DIR/ready, expects the test to stop the camera, and
reports the state text the page shows and whether the picture (the offline slate) keeps coming.
"""
import json, os, shutil, sys, time

from playwright.sync_api import sync_playwright

base, shots = sys.argv[1], sys.argv[2]
handshake = sys.argv[3] if len(sys.argv) > 3 else None
os.makedirs(shots, exist_ok=True)
out = {}
args = ["--autoplay-policy=no-user-gesture-required"]
if os.geteuid() == 0:
    args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=os.environ.get("LIVEGATE_CHROMIUM") or shutil.which("chromium"), headless=True, args=args)
    page = browser.new_page(viewport={"width": 1000, "height": 1200})
    page.on("console", lambda m: out.setdefault("console", []).append(m.text[:200]))
    t0 = time.monotonic()
    page.goto(base + "/")
    page.wait_for_function("document.querySelector('section[data-camera] video').videoWidth > 0", timeout=20000)
    out["first_frame_ms_after_navigation"] = round(1000 * (time.monotonic() - t0))
    page.wait_for_selector("section[data-preview]", timeout=20000)
    out["preview"] = page.get_attribute("section[data-camera]", "data-preview")
    video = "section[data-camera] video"
    q0 = page.evaluate(f"document.querySelector('{video}').getVideoPlaybackQuality().totalVideoFrames")
    time.sleep(1)
    q1 = page.evaluate(f"document.querySelector('{video}').getVideoPlaybackQuality().totalVideoFrames")
    out["frames_in_1s"] = q1 - q0
    out["width"] = page.evaluate(f"document.querySelector('{video}').videoWidth")
    out["height"] = page.evaluate(f"document.querySelector('{video}').videoHeight")
    page.screenshot(path=os.path.join(shots, "page-webrtc.png"), full_page=True)

    # Click-to-focus at (25 %, 50 %) of the picture.
    box = page.locator(video).bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.25, box["y"] + box["height"] * 0.5)
    page.wait_for_function("document.querySelector('section[data-camera] .mode').textContent.includes('focus')", timeout=10000)
    out["focus_text"] = page.text_content("section[data-camera] .mode")

    # A property change from the page, then the page shows the camera's value.
    sel = "select[data-name=whiteBalance]"
    page.wait_for_selector(sel, timeout=10000)
    page.select_option(sel, "tungsten")
    page.locator("h1").click()  # leave the control, so the page may update it again
    page.wait_for_timeout(4500)  # two refreshes
    out["white_balance"] = page.eval_on_selector(sel, "s => s.value")
    page.screenshot(path=os.path.join(shots, "page-after-controls.png"), full_page=True)

    # The shutter button (keyboard: focus it and press Enter); the saved picture is listed.
    page.focus("section[data-camera] button.shoot")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('section[data-camera] .pictures li') !== null", timeout=20000)
    out["picture"] = page.text_content("section[data-camera] .pictures li")
    out["shot_status"] = page.text_content("section[data-camera] .shot")

    # The MJPEG fallback.
    page2 = browser.new_page()
    page2.goto(base + "/?preview=mjpeg")
    page2.wait_for_selector("section[data-preview=mjpeg]", timeout=10000)
    page2.wait_for_function("document.querySelector('section[data-camera] img').naturalWidth > 0", timeout=10000)
    out["mjpeg_width"] = page2.evaluate("document.querySelector('section[data-camera] img').naturalWidth")
    page2.screenshot(path=os.path.join(shots, "page-mjpeg.png"))

    # The AF overlay toggle (drawn by the page from the `af` events over the camera's own JPEGs):
    # boxes appear where the event puts them, scaled to the picture on screen; off hides them.
    page2.check("section[data-camera] .aftoggle")
    page2.wait_for_function("+(document.querySelector('section[data-camera] canvas.af').dataset.boxes || 0) > 0", timeout=10000)
    out["af"] = page2.evaluate("""() => {
      const s = document.querySelector('section[data-camera]'), c = s.querySelector('canvas.af'), img = s.querySelector('img');
      const d = s.afEvent, a = d.areas[0], sx = c.width / d.width, sy = c.height / d.height;
      const g = c.getContext('2d');
      const edge = g.getImageData(Math.round((a.x + a.w / 2) * sx), Math.round(a.y * sy + 1), 1, 1).data[3];
      const inside = g.getImageData(Math.round((a.x + a.w / 2) * sx), Math.round((a.y + a.h / 2) * sy), 1, 1).data[3];
      const r = img.getBoundingClientRect(), cr = c.getBoundingClientRect();
      return {boxes: +c.dataset.boxes, edge_alpha: edge, inside_alpha: inside,
              canvas_over_picture: Math.abs(cr.left - r.left) < 1 && Math.abs(cr.top - r.top) < 1 && Math.abs(c.width - r.width) < 1.5,
              frame: [d.width, d.height], natural: [img.naturalWidth, img.naturalHeight]};
    }""")
    page2.screenshot(path=os.path.join(shots, "page-mjpeg-af.png"))
    page2.uncheck("section[data-camera] .aftoggle")
    out["af"]["hidden_after_off"] = page2.evaluate("document.querySelector('section[data-camera] canvas.af').hidden")
    page2.close()

    # On a phone: nothing wider than the screen, the picture fits.
    phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=3, is_mobile=True, has_touch=True)
    phone.goto(base + "/?preview=mjpeg")
    phone.wait_for_function("document.querySelector('section[data-camera] img').naturalWidth > 0", timeout=10000)
    out["phone"] = phone.evaluate("""() => ({scroll_width: document.documentElement.scrollWidth,
      picture_width: Math.round(document.querySelector('section[data-camera] img').getBoundingClientRect().width)})""")
    phone.screenshot(path=os.path.join(shots, "page-phone.png"), full_page=True)
    phone.close()
    page2.close()

    if handshake:
        # The camera dies: the page shows why, and the picture goes on (the slate, same session).
        open(os.path.join(handshake, "ready"), "w").close()
        page.wait_for_function("!/^streaming/.test(document.querySelector('section[data-camera] .state').textContent)", timeout=30000)
        page.wait_for_timeout(3000)  # the slate needs 2 s without frames, then comes at 5 fps
        out["offline_state"] = page.text_content("section[data-camera] .state")
        f0 = page.evaluate(f"document.querySelector('{video}').getVideoPlaybackQuality().totalVideoFrames")
        time.sleep(2)
        f1 = page.evaluate(f"document.querySelector('{video}').getVideoPlaybackQuality().totalVideoFrames")
        out["offline_frames_in_2s"] = f1 - f0
        page.screenshot(path=os.path.join(shots, "page-offline.png"), full_page=True)
    browser.close()
print(json.dumps(out))
