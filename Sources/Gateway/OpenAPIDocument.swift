// Generated from docs/openapi.yaml by `make openapi` (scripts/embed-openapi.sh); do not edit.
enum OpenAPIDocument {
    static let yaml = #"""
openapi: 3.1.0
info:
  title: livegate HTTP API
  version: 0.1.0
  summary: Control API, live-view streams and event stream of the livegate camera gateway.
  description: |
    The HTTP side of `livegate run`: the JSON control API under `/api/v1`, the camera event
    stream (Server-Sent Events), the media endpoints (MJPEG, snapshots, HLS, WebRTC/WHEP),
    Prometheus metrics and the built-in page. The gateway serves this document at
    `/api/v1/openapi.yaml`; the request and answer types are the Swift module `GatewayAPI`,
    which the server and the `livegate` command share.

    ## Access rules, applied before any route, in this order
    1. **Host check** (every address): the `Host` header must be an IP literal, `localhost`,
       this machine's host name (or `NAME.local`), or a name given with `--allowed-host` /
       `allowedHosts:`. Otherwise `421` (DNS-rebinding protection).
    2. **Origin check**: a POST, PUT, PATCH or DELETE that carries an `Origin` header must come
       from `http://<the request's Host>`. Otherwise `403`.
    3. **Content type check**: every POST and PUT must say `Content-Type: application/json`,
       even when it has no body (`POST /api/v1/reload`, a bodiless `capture`); under `/whep/`
       `application/sdp` and `application/trickle-ice-sdpfrag` pass too. Otherwise `415`.
    4. **Token** (only when the gateway was started with a token): every request, `OPTIONS`
       included, must present it as `Authorization: Bearer TOKEN`, as `?token=TOKEN`, or in the
       `livegate_token` cookie. Otherwise `401` with `WWW-Authenticate: Bearer realm="livegate"`.
       Without a token (only allowed while `--listen` is a loopback address, the default
       127.0.0.1) no authentication is required: the security requirement list therefore
       includes the empty requirement `{}`.

    ## Cross-origin reads
    No answer carries a wildcard `Access-Control-Allow-Origin`: only livegate's own page
    (same origin) may read what it serves. A GET or HEAD whose `Origin` is listed with
    `--allow-origin` / `allowedOrigins:` gets `Access-Control-Allow-Origin: <that origin>` and
    `Vary: Origin`.

    ## Connections
    A new connection has 10 s to send a complete request head, a kept-alive one 30 s
    (`--http-idle-timeout`) for its next request, a request's body must be read within 30 s of
    its head, and a streamed answer (MJPEG, events) whose client stops reading for 10 s is
    closed. Above a quarter of `--http-max-connections` (default 1024) connections waiting for
    a request are closed after 2 s; a connection beyond the maximum is answered `503` and
    closed. A request the HTTP parser refuses is answered `431` (request line or headers over
    80 KiB) or `400` and closed. `livegate_http_connections_closed_total{reason}` counts them.

    ## Errors
    Every error the gateway itself produces has a JSON body `{"error": "<sentence>"}`
    (`ErrorResponse`), sometimes with extra keys (`valid`, `cameraCode`, `state`). Exceptions:
    `405` on `PATCH /whep/...` and errors raised after a streamed body has started (a card
    download) have no JSON body; an error the API does not map (not a camera-control error,
    e.g. a camera that cannot be started during a reload) becomes Hummingbird's plain `500`.
    Successful JSON answers are written with sorted keys and a trailing newline.
servers:
  - url: http://127.0.0.1:8080
    description: The default (`--listen 127.0.0.1`, `--http-port 8080`).
security:
  - bearerAuth: []
  - tokenQuery: []
  - tokenCookie: []
  - {}
tags:
  - name: cameras
    description: Cameras, their state and their properties.
  - name: control
    description: Touch-AF and the shutter.
  - name: card
    description: The camera's memory card and the pictures saved by the gateway.
  - name: gateway
    description: Configuration reload, events, metrics and the page.
  - name: media
    description: Live-view streams (MJPEG, snapshot, HLS, WebRTC over WHEP).

paths:
  /:
    get:
      tags: [gateway]
      operationId: getPage
      summary: The built-in page (every camera, live preview, properties, shutter, URLs).
      parameters:
        - name: token
          in: query
          required: false
          description: >-
            When the gateway has a token and the page is opened with `?token=TOKEN`, the answer
            sets the `livegate_token` cookie (`Path=/; HttpOnly; SameSite=Strict`) so the page's
            own requests carry it.
          schema:
            type: string
      responses:
        '200':
          description: The page.
          headers:
            Set-Cookie:
              description: Only when a token is configured and `?token=` was given.
              schema:
                type: string
          content:
            text/html:
              schema:
                type: string
        '401':
          $ref: '#/components/responses/Unauthorized'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'

  /api/v1/cameras:
    get:
      tags: [cameras]
      operationId: listCameras
      summary: Every camera with its state, counters, outputs and capabilities.
      responses:
        '200':
          description: The cameras, in configuration order.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/CameraList'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'

  /api/v1/cameras/{id}:
    parameters:
      - $ref: '#/components/parameters/CameraID'
    get:
      tags: [cameras]
      operationId: getCamera
      summary: One camera (the same object as in the list).
      responses:
        '200':
          description: The camera.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/CameraSummary'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          $ref: '#/components/responses/NotFound'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'

  /api/v1/cameras/{id}/properties:
    parameters:
      - $ref: '#/components/parameters/CameraID'
    get:
      tags: [cameras]
      operationId: listProperties
      summary: Every property the camera supports, read from the camera now.
      responses:
        '200':
          description: The properties.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/PropertyList'
        '400':
          $ref: '#/components/responses/NotSupported'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          $ref: '#/components/responses/NotFound'
        '409':
          $ref: '#/components/responses/CameraRefusedAction'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '502':
          $ref: '#/components/responses/CameraError'
        '503':
          $ref: '#/components/responses/CameraUnavailable'

  /api/v1/cameras/{id}/properties/{name}:
    parameters:
      - $ref: '#/components/parameters/CameraID'
      - $ref: '#/components/parameters/PropertyNameParameter'
    get:
      tags: [cameras]
      operationId: getProperty
      summary: One property.
      responses:
        '200':
          description: The property.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/CameraProperty'
        '400':
          $ref: '#/components/responses/NotSupported'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          description: >-
            No such camera, a name outside the vocabulary ("unknown property '…'; properties:
            …"), or a property this camera does not support ("cam0 does not support iso").
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '409':
          $ref: '#/components/responses/CameraRefusedAction'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '502':
          $ref: '#/components/responses/CameraError'
        '503':
          $ref: '#/components/responses/CameraUnavailable'
    put:
      tags: [cameras]
      operationId: setProperty
      summary: Set one property.
      description: >-
        A JSON number is sent as a number; a string (1…64 characters) is read in the common
        vocabulary: lower-cased for `whiteBalance` and `focusMode`, turned into a number for
        `iso` and `exposureCompensation` when it is numeric, kept as it is for `shutterSpeed`
        and `aperture` (send those as strings: `"1/250"`, `"5.6"`). A value the camera does not
        offer is refused before anything is sent to it (400 with `valid`). The change is also
        sent at once as a `property` event.
      requestBody:
        required: true
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/PropertyUpdate'
      responses:
        '200':
          description: The camera accepted the value.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/PropertyUpdateResult'
        '400':
          description: >-
            The body is not a JSON object, has no `value`, or `value` is not a non-empty string
            of at most 64 characters or a number (booleans, objects, null refused); the camera
            does not offer that value (`InvalidValueError`, with `valid`); or the camera does not
            support the property.
          content:
            application/json:
              schema:
                anyOf:
                  - $ref: '#/components/schemas/InvalidValueError'
                  - $ref: '#/components/schemas/ErrorResponse'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '403':
          $ref: '#/components/responses/ForeignOrigin'
        '404':
          description: No such camera, or a property name outside the vocabulary.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '409':
          $ref: '#/components/responses/CameraRefusedAction'
        '413':
          $ref: '#/components/responses/BodyTooLarge'
        '415':
          $ref: '#/components/responses/UnsupportedMediaType'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '502':
          $ref: '#/components/responses/CameraError'
        '503':
          $ref: '#/components/responses/CameraUnavailable'

  /api/v1/cameras/{id}/focus:
    parameters:
      - $ref: '#/components/parameters/CameraID'
    post:
      tags: [control]
      operationId: touchFocus
      summary: Touch-AF at a point given in pixels of the camera's live-view image.
      requestBody:
        required: true
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/FocusRequest'
      responses:
        '200':
          description: The camera was asked to focus there.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/FocusResult'
        '400':
          description: >-
            Not a JSON object, `x`/`y` missing, not numbers or not finite, the point is outside
            the current frame (0…width, 0…height), or the camera refused it as not supported.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '403':
          $ref: '#/components/responses/ForeignOrigin'
        '404':
          $ref: '#/components/responses/NotFound'
        '409':
          $ref: '#/components/responses/CameraRefusedAction'
        '413':
          $ref: '#/components/responses/BodyTooLarge'
        '415':
          $ref: '#/components/responses/UnsupportedMediaType'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '501':
          $ref: '#/components/responses/NotImplemented'
        '502':
          $ref: '#/components/responses/CameraError'
        '503':
          description: No frame yet from the camera (the image size is unknown), or the camera is unreachable.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'

  /api/v1/cameras/{id}/capture:
    parameters:
      - $ref: '#/components/parameters/CameraID'
    post:
      tags: [control]
      operationId: capture
      summary: Fire the shutter; answers once the pictures are saved.
      description: >-
        The body is optional (it is read only when the request has a `Content-Length` above 0
        or a `Transfer-Encoding`), but `Content-Type: application/json` is required either way.
        Answers 200 (not 201) with the files saved from this shot.
      requestBody:
        required: false
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/CaptureRequest'
      responses:
        '200':
          description: The pictures the shot produced, saved under the captures folder.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/CaptureList'
        '400':
          description: A body that is not a JSON object, `autofocus` that is not a boolean, or not supported by the camera.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '403':
          $ref: '#/components/responses/ForeignOrigin'
        '404':
          $ref: '#/components/responses/NotFound'
        '409':
          $ref: '#/components/responses/CameraRefusedAction'
        '413':
          $ref: '#/components/responses/BodyTooLarge'
        '415':
          $ref: '#/components/responses/UnsupportedMediaType'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '500':
          $ref: '#/components/responses/UnmappedError'
        '501':
          $ref: '#/components/responses/NotImplemented'
        '502':
          $ref: '#/components/responses/CameraError'
        '503':
          description: The camera is unreachable, or the shot was taken but a picture could not be saved.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'

  /api/v1/cameras/{id}/captures:
    parameters:
      - $ref: '#/components/parameters/CameraID'
    get:
      tags: [card]
      operationId: listCaptures
      summary: Pictures saved from the camera since the gateway started (API and body shots), oldest first, at most 1000.
      responses:
        '200':
          description: The saved pictures.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/CaptureList'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          $ref: '#/components/responses/NotFound'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'

  /api/v1/cameras/{id}/files:
    parameters:
      - $ref: '#/components/parameters/CameraID'
    get:
      tags: [card]
      operationId: listCardFiles
      summary: The files on the camera's card, sorted by path, one page at a time.
      parameters:
        - name: offset
          in: query
          required: false
          schema:
            type: integer
            minimum: 0
            default: 0
        - name: limit
          in: query
          required: false
          schema:
            type: integer
            minimum: 1
            maximum: 1000
            default: 100
      responses:
        '200':
          description: One page of the listing.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/CardFileList'
        '400':
          description: "`offset` or `limit` is not a whole number in range, or the camera does not support the listing."
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          $ref: '#/components/responses/NotFound'
        '409':
          $ref: '#/components/responses/CameraRefusedAction'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '500':
          $ref: '#/components/responses/UnmappedError'
        '501':
          $ref: '#/components/responses/NotImplemented'
        '502':
          $ref: '#/components/responses/CameraError'
        '503':
          $ref: '#/components/responses/CameraUnavailable'

  /api/v1/cameras/{id}/files/{path}:
    parameters:
      - $ref: '#/components/parameters/CameraID'
      - $ref: '#/components/parameters/CardPath'
    get:
      tags: [card]
      operationId: downloadCardFile
      summary: One listed file, streamed from the camera, with single-range support; or its thumbnail or a preview.
      parameters:
        - name: thumbnail
          in: query
          required: false
          description: >-
            Present (any value, or none): the camera's thumbnail of the file instead (image/jpeg,
            as `/thumbnails/{path}`; 501 when the camera makes none).
          schema:
            type: string
        - name: preview
          in: query
          required: false
          description: >-
            Present (any value, or none): a screen-sized image/jpeg instead. A JPEG picture is read
            from the camera (at most 64 MiB, else 413) and decoded reduced by ½, ¼ or ⅛ as far as
            its longer side stays at least 1280 pixels (a smaller picture stays whole), then encoded
            again; for other files the camera's thumbnail (501 when it makes none). At most two
            previews are made at once (503 beyond); a header claiming more than 200 megapixels is 502.
          schema:
            type: string
        - name: Range
          in: header
          required: false
          description: >-
            One range only: `bytes=A-B`, `bytes=A-` or `bytes=-N` (B beyond the end is cut to the
            end). Several ranges, another unit or a range outside the file is 416.
          schema:
            type: string
      responses:
        '200':
          description: >-
            The whole file. The type follows the extension (JPG/JPEG image/jpeg, MOV
            video/quicktime, MP4 video/mp4, AVI video/x-msvideo, anything else
            application/octet-stream). If the camera sends fewer or more bytes than its listing
            said, the connection ends early (the status is already sent).
          headers:
            Accept-Ranges:
              schema:
                type: string
                const: bytes
            Content-Disposition:
              schema:
                type: string
          content:
            application/octet-stream:
              schema:
                type: string
                format: binary
            image/jpeg:
              schema:
                type: string
                format: binary
            video/quicktime:
              schema:
                type: string
                format: binary
            video/mp4:
              schema:
                type: string
                format: binary
            video/x-msvideo:
              schema:
                type: string
                format: binary
        '206':
          description: The requested range (same content types as 200).
          headers:
            Content-Range:
              schema:
                type: string
            Accept-Ranges:
              schema:
                type: string
                const: bytes
            Content-Disposition:
              schema:
                type: string
          content:
            application/octet-stream:
              schema:
                type: string
                format: binary
        '400':
          $ref: '#/components/responses/BadCardPath'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          description: No such camera, or the camera does not list this path.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '409':
          $ref: '#/components/responses/CameraRefusedAction'
        '413':
          description: "`?preview` of a picture larger than 64 MiB."
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '416':
          description: The range cannot be served.
          headers:
            Content-Range:
              description: "`bytes */SIZE`"
              schema:
                type: string
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '500':
          $ref: '#/components/responses/UnmappedError'
        '501':
          $ref: '#/components/responses/NotImplemented'
        '502':
          $ref: '#/components/responses/CameraError'
        '503':
          $ref: '#/components/responses/CameraUnavailable'

  /api/v1/cameras/{id}/thumbnails/{path}:
    parameters:
      - $ref: '#/components/parameters/CameraID'
      - $ref: '#/components/parameters/CardPath'
    get:
      tags: [card]
      operationId: getCardThumbnail
      summary: The camera's own small JPEG preview of a listed file.
      responses:
        '200':
          description: The thumbnail (`Cache-Control max-age=3600`).
          headers:
            Cache-Control:
              schema:
                type: string
          content:
            image/jpeg:
              schema:
                type: string
                format: binary
        '400':
          $ref: '#/components/responses/BadCardPath'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          description: No such camera, or the camera does not list this path.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '409':
          $ref: '#/components/responses/CameraRefusedAction'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '500':
          $ref: '#/components/responses/UnmappedError'
        '501':
          description: The camera has no card access, or makes no thumbnails.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '502':
          description: The camera refused (with `cameraCode`), or sent something that is not a JPEG.
          content:
            application/json:
              schema:
                anyOf:
                  - $ref: '#/components/schemas/CameraRefusedError'
                  - $ref: '#/components/schemas/ErrorResponse'
        '503':
          $ref: '#/components/responses/CameraUnavailable'

  /api/v1/reload:
    post:
      tags: [gateway]
      operationId: reload
      summary: Read the `--config` file again (as SIGHUP does) and apply only the differences.
      description: >-
        No body is read, but `Content-Type: application/json` is required. Cameras whose
        settings changed are removed and added again; the others keep streaming. A successful
        reload is announced as a `config` event.
      responses:
        '200':
          description: What the reload changed.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ReloadResult'
        '400':
          description: The file is broken (the message names file, line and key) or camera names are not unique; nothing changed.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '403':
          $ref: '#/components/responses/ForeignOrigin'
        '409':
          description: Not started with `--config` (nothing to reload), or a reload is already running.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '415':
          $ref: '#/components/responses/UnsupportedMediaType'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '500':
          $ref: '#/components/responses/UnmappedError'

  /api/v1/openapi.yaml:
    get:
      tags: [gateway]
      operationId: getOpenAPIDocument
      summary: This document.
      responses:
        '200':
          description: The OpenAPI 3.1 document of this API.
          content:
            application/yaml:
              schema:
                type: string
        '401':
          $ref: '#/components/responses/Unauthorized'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
  /api/v1/events:
    get:
      tags: [gateway]
      operationId: streamEvents
      summary: Camera events as Server-Sent Events.
      description: |
        One stream for every camera (or one, with `?camera=`). The stream opens with the comment
        line `: livegate camera events (state, property, af)`. Each event is
        `id: N` (see below), `event: KIND`, `data: <one JSON object, sorted keys>`.

        | event | data schema |
        | --- | --- |
        | `state` | `StateEvent` |
        | `property` | `PropertyEvent` |
        | `af` | `AFEvent` |
        | `storage` | `StorageEvent` |
        | `recording` | `RecordingEvent` |
        | `capture` | `SavedCapture` |
        | `capture-failed` | `CaptureFailedEvent` |
        | `push` | `PushEvent` |
        | `config` | `ConfigEvent` |

        Events broadcast to all listeners carry an increasing `id`; the newest 512 are kept and a
        client that reconnects with `Last-Event-ID` first gets those it missed. A newcomer that
        joins while others are listening is first sent every camera's current `state` and
        `property` values without an `id`. With `?camera=`, events whose data has no `camera`
        (`config`) are not sent.
      parameters:
        - name: camera
          in: query
          required: false
          description: Only this camera's events.
          schema:
            type: string
        - name: Last-Event-ID
          in: header
          required: false
          description: The last id seen; a whole number (anything else is ignored).
          schema:
            type: integer
      responses:
        '200':
          description: An endless event stream (`Cache-Control no-cache`).
          content:
            text/event-stream:
              schema:
                type: string
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          description: "`?camera=` names no camera (or the model offers no event stream)."
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'

  /metrics:
    get:
      tags: [gateway]
      operationId: getMetrics
      summary: Prometheus text exposition (`livegate_*` counters, gauges and latency histograms).
      responses:
        '200':
          description: The metrics.
          content:
            text/plain; version=0.0.4:
              schema:
                type: string
        '401':
          $ref: '#/components/responses/Unauthorized'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'

  /mjpeg/{id}:
    parameters:
      - $ref: '#/components/parameters/CameraID'
    get:
      tags: [media]
      operationId: streamMJPEG
      summary: The camera's JPEGs as they came, as `multipart/x-mixed-replace`.
      description: >-
        Every part is `--livegate-mjpeg-frame`, `Content-Type image/jpeg`, `Content-Length`,
        then one JPEG (the camera's bytes, or the offline slate while it is away). A slow viewer
        skips to the newest frame.
      parameters:
        - name: overlay
          in: query
          required: false
          description: "`af` draws the camera's AF areas into frames that carry some."
          schema:
            type: string
            enum: [af, none]
            default: none
      responses:
        '200':
          description: An endless multipart stream (`Cache-Control no-cache, no-store`).
          content:
            multipart/x-mixed-replace; boundary=livegate-mjpeg-frame:
              schema:
                type: string
                format: binary
        '400':
          description: "`overlay` is neither `af` nor `none`."
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          $ref: '#/components/responses/NotFound'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '503':
          description: The camera has no media graph.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'

  /snapshot/{id}.jpg:
    parameters:
      - $ref: '#/components/parameters/CameraID'
    get:
      tags: [media]
      operationId: getSnapshot
      summary: The newest frame the camera sent (or the slate it shows).
      responses:
        '200':
          description: One JPEG (`Cache-Control no-cache, no-store`).
          headers:
            X-Frame-Age-Ms:
              description: Milliseconds since the frame arrived (0 when unknown).
              schema:
                type: integer
          content:
            image/jpeg:
              schema:
                type: string
                format: binary
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          description: No such camera, or the path does not end in `.jpg`.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '503':
          description: No frame yet; `state` tells the camera's connection state.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/NoFrameError'

  /hls/{id}/{file}:
    parameters:
      - $ref: '#/components/parameters/CameraID'
      - name: file
        in: path
        required: true
        description: >-
          `index.m3u8` or a segment name: ASCII letters, digits, `.`, `_`, `-`, not starting
          with `.`, ending in `.m3u8` or `.ts`, at most 64 characters.
        schema:
          type: string
          pattern: '^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$'
    get:
      tags: [media]
      operationId: getHLSFile
      summary: HLS playlist or segment; the first request starts the camera's HLS.
      responses:
        '200':
          description: The file (playlist `no-cache`, segments `max-age=60`).
          content:
            application/vnd.apple.mpegurl:
              schema:
                type: string
            video/mp2t:
              schema:
                type: string
                format: binary
        '401':
          $ref: '#/components/responses/Unauthorized'
        '404':
          description: HLS is off, no such camera, a file name that is not allowed, a playlist not written yet, or a segment that is gone.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '503':
          description: The playlist did not appear within the start timeout.
          headers:
            Retry-After:
              schema:
                type: integer
                const: 1
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'

  /whep/{id}:
    parameters:
      - $ref: '#/components/parameters/CameraID'
    post:
      tags: [media]
      operationId: whepOffer
      summary: WebRTC playback (WHEP, RFC 9725) - a recvonly H.264 offer in, the answer out.
      requestBody:
        required: true
        content:
          application/sdp:
            schema:
              type: string
              maxLength: 65536
      responses:
        '201':
          description: >-
            The SDP answer with every ICE candidate (no trickle). `Location` is the session to
            DELETE.
          headers:
            Location:
              description: "`/whep/{id}/sessions/{session}` (relative)."
              schema:
                type: string
            Access-Control-Expose-Headers:
              schema:
                type: string
          content:
            application/sdp:
              schema:
                type: string
        '400':
          description: Not an SDP offer, or no video m-line.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '403':
          $ref: '#/components/responses/ForeignOrigin'
        '404':
          $ref: '#/components/responses/NotFound'
        '406':
          description: No H.264 with packetization-mode 1 in the offer.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '413':
          description: The offer is larger than 64 KiB.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '415':
          description: >-
            Not `application/sdp`. (The access check lets `application/json` and
            `application/trickle-ice-sdpfrag` through on `/whep/`; the handler then refuses them.)
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
        '503':
          description: Sixteen sessions already, WebRTC not installed (webrtcbin/libnice), or the pipeline failed.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
    options:
      tags: [media]
      operationId: whepOptions
      summary: CORS preflight (no Access-Control-Allow-Origin is sent, so only the page's own origin works).
      responses:
        '204':
          $ref: '#/components/responses/WHEPPreflight'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'

  /whep/{id}/sessions/{session}:
    parameters:
      - $ref: '#/components/parameters/CameraID'
      - name: session
        in: path
        required: true
        schema:
          type: string
    delete:
      tags: [media]
      operationId: whepEndSession
      summary: End a WebRTC session.
      responses:
        '200':
          description: Ended (empty body).
        '401':
          $ref: '#/components/responses/Unauthorized'
        '403':
          $ref: '#/components/responses/ForeignOrigin'
        '404':
          description: No such camera, or no such session of this camera.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ErrorResponse'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
    patch:
      tags: [media]
      operationId: whepPatchSession
      summary: Trickle ICE / ICE restart; not supported (the answer already has every candidate).
      responses:
        '401':
          $ref: '#/components/responses/Unauthorized'
        '403':
          $ref: '#/components/responses/ForeignOrigin'
        '405':
          description: Always; empty body, `Allow DELETE`.
          headers:
            Allow:
              schema:
                type: string
                const: DELETE
        '421':
          $ref: '#/components/responses/MisdirectedRequest'
    options:
      tags: [media]
      operationId: whepSessionOptions
      summary: CORS preflight for the session URL.
      responses:
        '204':
          $ref: '#/components/responses/WHEPPreflight'
        '401':
          $ref: '#/components/responses/Unauthorized'
        '421':
          $ref: '#/components/responses/MisdirectedRequest'

components:
  securitySchemes:
    bearerAuth:
      type: http
      scheme: bearer
      description: >-
        `Authorization: Bearer TOKEN` with the gateway's token (`LIVEGATE_TOKEN`, `token:` in the
        config file or `--token`). Only enforced when a token is configured; on loopback without a
        token nothing is asked.
    tokenQuery:
      type: apiKey
      in: query
      name: token
      description: "`?token=TOKEN`, for players that cannot send headers (HLS, MJPEG, SSE)."
    tokenCookie:
      type: apiKey
      in: cookie
      name: livegate_token
      description: Set by `GET /?token=TOKEN` (HttpOnly, SameSite=Strict); used by the page's own requests.

  parameters:
    CameraID:
      name: id
      in: path
      required: true
      description: The camera's name (`cam0`, `cam1`, … unless named in the configuration).
      schema:
        type: string
    PropertyNameParameter:
      name: name
      in: path
      required: true
      description: A property of the common vocabulary; any other name is 404.
      schema:
        $ref: '#/components/schemas/PropertyName'
    CardPath:
      name: path
      in: path
      required: true
      description: >-
        The camera's path of the file without its leading `/`, e.g. `DCIM/100OLYMP/P6130005.JPG`.
        It spans several path segments (1…16), each percent-decoded once; empty, `.`, `..`,
        components containing `/`, `\` or control characters are 400. Only a path the camera
        lists is served.
      schema:
        type: string

  responses:
    Unauthorized:
      description: A token is configured and the request did not present it (or presented a wrong one).
      headers:
        WWW-Authenticate:
          schema:
            type: string
            const: Bearer realm="livegate"
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    MisdirectedRequest:
      description: The `Host` header does not name this machine (DNS-rebinding protection).
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    ForeignOrigin:
      description: A state-changing request whose `Origin` is not this server.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    UnsupportedMediaType:
      description: A POST or PUT without `Content-Type application/json`.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    BodyTooLarge:
      description: The request body is larger than 16 KiB.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    NotFound:
      description: "No such camera (\"no camera 'x'; cameras: cam0, cam1\")."
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    NotSupported:
      description: "The camera does not support this (\"not supported by this camera: …\")."
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    NotImplemented:
      description: The camera's vendor plug-in lacks the capability; the message gives the vendor's reason.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    CameraRefusedAction:
      description: The camera refused the action in its current state (card full, wrong mode…).
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    CameraError:
      description: The camera answered with an error of its own.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/CameraRefusedError'
    CameraUnavailable:
      description: The camera cannot be reached or is not connected.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    BadCardPath:
      description: The path is not a valid card path (see the `path` parameter).
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/ErrorResponse'
    UnmappedError:
      description: >-
        An error the API does not map to a status (not a camera-control error). Hummingbird's own
        answer; not the JSON error shape.
    WHEPPreflight:
      description: CORS preflight answer, no body.
      headers:
        Access-Control-Allow-Methods:
          schema:
            type: string
            const: POST, DELETE, PATCH, OPTIONS
        Access-Control-Allow-Headers:
          schema:
            type: string
            const: Content-Type
        Access-Control-Expose-Headers:
          schema:
            type: string
            const: Location

  schemas:
    ErrorResponse:
      type: object
      description: The body of every JSON error; some errors add keys (see the schemas below).
      required: [error]
      properties:
        error:
          type: string
          description: A sentence for people.
    InvalidValueError:
      description: 400 when the camera does not offer the value; nothing was sent to the camera.
      allOf:
        - $ref: '#/components/schemas/ErrorResponse'
        - type: object
          required: [valid]
          properties:
            valid:
              type: array
              description: >-
                The values the camera offers, always as strings (also for numeric properties
                such as `iso`: `["100", "200", "400"]`), or a description of a range
                (`["2500K…9900K in steps of 100K"]`).
              items:
                type: string
    CameraRefusedError:
      description: 502 when the camera refused with its own error code.
      allOf:
        - $ref: '#/components/schemas/ErrorResponse'
        - type: object
          required: [cameraCode]
          properties:
            cameraCode:
              type: integer
              description: The camera's own error code.
    NoFrameError:
      description: 503 of a snapshot before the first frame.
      allOf:
        - $ref: '#/components/schemas/ErrorResponse'
        - type: object
          required: [state]
          properties:
            state:
              $ref: '#/components/schemas/CameraState'

    CameraState:
      type: string
      description: The connection state of a camera.
      enum: [connecting, streaming, reconnecting, stopped, failed]
    PropertyName:
      type: string
      description: Property names, the same for every vendor.
      enum: [whiteBalance, iso, shutterSpeed, aperture, exposureCompensation, focusMode]
    PropertyValue:
      description: >-
        A value in the common vocabulary: a string (`"auto"`, `"tungsten"`, `"5500K"`,
        `"1/250"`, `"5.6"`, `"af-s"`) or a number (`400`, `-0.7`). Whole numbers are written as
        integers. White-balance presets: auto, daylight, shade, cloudy, tungsten, fluorescent,
        flash, custom (or a Kelvin value such as "5500K"); focus modes: af-s, af-c, mf, dmf.
      type: [string, number]

    CameraList:
      type: array
      items:
        $ref: '#/components/schemas/CameraSummary'
    CameraSummary:
      type: object
      description: >-
        One camera, as `GET /api/v1/cameras` lists it and `GET /api/v1/cameras/{id}` returns it
        (there is no separate detail shape). Every key is always present.
      additionalProperties: false
      required: [id, vendor, url, state, fps, frames, drops, reconnects, width, height, rotation,
                 outputs, reason, branches, push, capabilities, properties, storage]
      properties:
        id:
          type: string
        vendor:
          type: string
          description: The driver's vendor family, e.g. sony, olympus, panasonic, bandit, nikon, canon, sony-ptp, fuji, ptp.
        url:
          type: string
          description: The camera URL, or `emulator:NAME (URL)` for an in-process emulator.
        state:
          $ref: '#/components/schemas/CameraState'
        fps:
          type: number
          description: Frames per second over the last second, one decimal.
        frames:
          type: integer
          description: Frames received since start.
        drops:
          type: integer
          description: Damaged or incomplete frames dropped at ingest.
        reconnects:
          type: integer
        width:
          type: integer
          description: Width of the newest frame (0 before the first).
        height:
          type: integer
          description: Height of the newest frame (0 before the first).
        rotation:
          type: integer
          description: Clockwise degrees the camera asks for its newest frame (0 when upright or before the first frame).
        outputs:
          $ref: '#/components/schemas/CameraOutputs'
        reason:
          type: [string, 'null']
          description: Why the camera is away or shows the slate; null while all is well.
        branches:
          $ref: '#/components/schemas/CameraBranches'
        push:
          type: array
          items:
            $ref: '#/components/schemas/PushStatus'
        capabilities:
          $ref: '#/components/schemas/CameraCapabilities'
        properties:
          type: array
          description: The properties the vendor plug-in maps (not read from the camera).
          items:
            $ref: '#/components/schemas/PropertyName'
        storage:
          description: The card as the camera last reported it; null when the driver reports none.
          oneOf:
            - $ref: '#/components/schemas/CameraStorage'
            - type: 'null'
    CameraOutputs:
      type: object
      description: >-
        Where to watch the camera. Values are URLs except `v4l2` (a device path), `pipewire`
        (a node name) and `recording` (a folder). URLs never carry the token.
      additionalProperties: false
      required: [rtsp, rtspRaw, whep, mjpeg, snapshot]
      properties:
        rtsp:
          type: string
          description: H.264 over RTSP.
        rtspRaw:
          type: string
          description: The camera's JPEGs over RTSP.
        hls:
          type: string
          description: Only while HLS is on.
        whep:
          type: string
          description: Listed even when WebRTC is not installed.
        mjpeg:
          type: string
        snapshot:
          type: string
        v4l2:
          type: string
          description: First camera only, when a v4l2loopback device is configured.
        pipewire:
          type: string
          description: First camera only, when a PipeWire node is configured.
        recording:
          type: string
          description: The recording folder, when recording is on.
    CameraBranches:
      type: object
      description: What runs for the camera right now; an empty object when it has no media graph.
      additionalProperties: false
      properties:
        jpeg:
          type: boolean
        picture:
          type: boolean
        encoder:
          type: boolean
        hls:
          type: boolean
        slate:
          type: boolean
          description: True while the offline slate is shown.
    CameraCapabilities:
      type: object
      description: What livegate can do with this vendor's cameras; every key is always present.
      additionalProperties: false
      required: [liveView, afAreas, touchAF, shutter, transfer, files, events]
      properties:
        liveView:
          type: boolean
        afAreas:
          type: boolean
        touchAF:
          type: boolean
        shutter:
          type: boolean
        transfer:
          type: boolean
        files:
          type: boolean
        events:
          type: boolean
    CameraStorage:
      type: object
      description: Only the fields the camera reported are present (possibly none).
      additionalProperties: false
      properties:
        mounted:
          type: boolean
        full:
          type: boolean
        writeProtected:
          type: boolean
        error:
          type: boolean
          description: The card is in error (a boolean, unlike the `error` string of error bodies).
        writing:
          type: boolean
        remainingShots:
          type: integer
    PushState:
      type: string
      enum: [connecting, pushing, retrying, stopped]
    PushStatus:
      type: object
      description: A push of the camera to a media server.
      additionalProperties: false
      required: [url, state, reason, attempts, since]
      properties:
        url:
          type: string
          description: The target, without credentials.
        state:
          $ref: '#/components/schemas/PushState'
        reason:
          type: [string, 'null']
        attempts:
          type: integer
        since:
          type: string
          format: date-time

    PropertyList:
      type: array
      items:
        $ref: '#/components/schemas/CameraProperty'
    CameraProperty:
      type: object
      additionalProperties: false
      required: [name, value, displayText, choices, writable]
      properties:
        name:
          $ref: '#/components/schemas/PropertyName'
        value:
          description: Current value; null when the camera has not said yet.
          oneOf:
            - $ref: '#/components/schemas/PropertyValue'
            - type: 'null'
        displayText:
          type: [string, 'null']
          description: What the camera itself calls the current value.
        choices:
          type: array
          description: The values the camera offers now.
          items:
            $ref: '#/components/schemas/PropertyValue'
        writable:
          type: boolean
    PropertyUpdate:
      type: object
      description: Other keys are ignored.
      required: [value]
      properties:
        value:
          oneOf:
            - type: string
              minLength: 1
              maxLength: 64
            - type: number
    PropertyUpdateResult:
      type: object
      additionalProperties: false
      required: [name, value, status]
      properties:
        name:
          $ref: '#/components/schemas/PropertyName'
        value:
          $ref: '#/components/schemas/PropertyValue'
        status:
          type: string
          const: accepted

    FocusRequest:
      type: object
      description: A point in pixels of the camera's live-view image (0…width, 0…height). Other keys are ignored.
      required: [x, y]
      properties:
        x:
          type: number
        y:
          type: number
    FocusResult:
      type: object
      additionalProperties: false
      required: [x, y, status]
      properties:
        x:
          type: number
        y:
          type: number
        status:
          type: string
          const: accepted

    CaptureRequest:
      type: object
      description: Other keys are ignored.
      properties:
        autofocus:
          type: boolean
          default: false
          description: Focus (half-press) before the shot.
    CaptureList:
      type: object
      additionalProperties: false
      required: [files]
      properties:
        files:
          type: array
          items:
            $ref: '#/components/schemas/SavedCapture'
    SavedCapture:
      type: object
      description: A picture saved by the gateway under `<captures>/<camera>/`.
      additionalProperties: false
      required: [camera, name, cameraName, path, bytes, sha256, fromBody, savedAt]
      properties:
        camera:
          type: string
        name:
          type: string
          description: The name it was saved under (the camera's name made safe, `-N` added when taken).
        cameraName:
          type: string
          description: The camera's own name for the file.
        path:
          type: string
          description: Where it was saved on the gateway's file system.
        bytes:
          type: integer
        sha256:
          type: string
          pattern: '^[0-9a-f]{64}$'
        fromBody:
          type: boolean
          description: True for a shot taken on the camera body (not through the API).
        savedAt:
          type: string
          format: date-time

    CardFileKind:
      type: string
      enum: [image, raw, video, other]
    CardFile:
      type: object
      description: A file on the camera's card.
      additionalProperties: false
      required: [path, name, folder, size, kind, date]
      properties:
        path:
          type: string
          description: The camera's path, e.g. `/DCIM/100OLYMP/P6130005.JPG`.
        name:
          type: string
        folder:
          type: string
        size:
          type: integer
          description: Bytes; 0 when the camera's listing gives no size (older LUMIX bodies, Sony's Contents
            Transfer) — a download then asks the camera first and, when it still does not say, sends the
            whole file without Content-Length or ranges.
        kind:
          $ref: '#/components/schemas/CardFileKind'
        date:
          type: [string, 'null']
          format: date-time
    CardFileList:
      type: object
      additionalProperties: false
      required: [total, offset, limit, files]
      properties:
        total:
          type: integer
          description: Files on the card.
        offset:
          type: integer
        limit:
          type: integer
        files:
          type: array
          items:
            $ref: '#/components/schemas/CardFile'

    ReloadResult:
      type: object
      additionalProperties: false
      required: [added, removed, unchanged]
      properties:
        added:
          type: array
          items:
            type: string
        removed:
          type: array
          description: Removed cameras, including those restarted because their settings changed (also listed in `added`).
          items:
            type: string
        unchanged:
          type: array
          items:
            type: string

    StateEvent:
      type: object
      description: Data of `event state`.
      additionalProperties: false
      required: [camera, state, reason]
      properties:
        camera:
          type: string
        state:
          $ref: '#/components/schemas/CameraState'
        reason:
          type: [string, 'null']
    PropertyEvent:
      type: object
      description: >-
        Data of `event property`: a value seen changed on the camera, or set through the API (then
        `displayText` is null).
      additionalProperties: false
      required: [camera, name, value, displayText]
      properties:
        camera:
          type: string
        name:
          $ref: '#/components/schemas/PropertyName'
        value:
          oneOf:
            - $ref: '#/components/schemas/PropertyValue'
            - type: 'null'
        displayText:
          type: [string, 'null']
    AFEvent:
      type: object
      description: Data of `event af`, the newest frame's AF areas (at most twice a second, when they change).
      additionalProperties: false
      required: [camera, width, height, rotation, areas]
      properties:
        camera:
          type: string
        width:
          type: integer
        height:
          type: integer
        rotation:
          type: integer
        areas:
          type: array
          items:
            $ref: '#/components/schemas/AFAreaBox'
    AFAreaBox:
      type: object
      description: One AF area in pixels of the frame (not rotated).
      additionalProperties: false
      required: [x, y, w, h, kind, state]
      properties:
        x:
          type: integer
        y:
          type: integer
        w:
          type: integer
        h:
          type: integer
        kind:
          $ref: '#/components/schemas/AFAreaKind'
        state:
          $ref: '#/components/schemas/AFAreaState'
    AFAreaKind:
      type: string
      description: >-
        The Swift case names (camelCase), not the hyphenated names the recorder's sidecar uses
        (`contrastAF` here, `contrast-af` there).
      enum: [invalid, unknown, af, contrastAF, phaseAF, face, eye, subject, tracking, mfAssist, box, cross]
    AFAreaState:
      type: string
      description: Swift case names (`notFocused`; the sidecar writes `not-focused`).
      enum: [invalid, unknown, normal, main, sub, focused, focusing, notFocused, selected, locked, unlocked]
    StorageEvent:
      type: object
      description: Data of `event storage` (checked every second, sent when it changes); only the reported fields.
      additionalProperties: false
      required: [camera]
      properties:
        camera:
          type: string
        mounted:
          type: boolean
        full:
          type: boolean
        writeProtected:
          type: boolean
        error:
          type: boolean
        writing:
          type: boolean
        remainingShots:
          type: integer
    RecordingEvent:
      type: object
      description: Data of `event recording`.
      additionalProperties: false
      required: [camera, change, path, frames, clean]
      properties:
        camera:
          type: string
        change:
          type: string
          enum: [started, finished]
        path:
          type: string
          description: The segment's .mkv file.
        frames:
          type: integer
          description: Frames written (0 when it starts).
        clean:
          type: boolean
          description: False when the segment's end was not clean.
    CaptureFailedEvent:
      type: object
      description: Data of `event capture-failed`.
      additionalProperties: false
      required: [camera, name, reason]
      properties:
        camera:
          type: string
        name:
          type: string
        reason:
          type: string
    PushEvent:
      type: object
      description: Data of `event push` (a PushStatus plus the camera).
      additionalProperties: false
      required: [camera, url, state, reason, attempts, since]
      properties:
        camera:
          type: string
        url:
          type: string
        state:
          $ref: '#/components/schemas/PushState'
        reason:
          type: [string, 'null']
        attempts:
          type: integer
        since:
          type: string
          format: date-time
    ConfigEvent:
      type: object
      description: Data of `event config` after a reload (no `unchanged`, unlike ReloadResult).
      additionalProperties: false
      required: [added, removed]
      properties:
        added:
          type: array
          items:
            type: string
        removed:
          type: array
          items:
            type: string
"""#
}
